"""Ranks of one job on one host share a fresh kernel cache: each kernel is compiled once (no GPU needed:
NVRTC compiles for sm_90a; bench/python/torchrun_cache.py measures the same on GPUs with torchrun)."""

import multiprocessing as mp
import os

SPECS = ["bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4",
         "bf16[2] -> mxfp4.e2m1 floor blocks(1,32)",
         "f32[3] -> mxfp8.e5m2 even blocks(1,32) q:expert_col_major"]


def _rank(cache_dir, barrier, results):
    os.environ["MXJIT_CACHE_DIR"] = cache_dir
    import mxjit as mx

    kernels = [mx.jit(mx.parse_pipeline(s)) for s in SPECS]
    barrier.wait()  # all ranks miss together
    mx.warmup(kernels, archs=["sm_90a"], threads=1)
    results.put(mx.cache_stats())


def test_ranks_compile_each_kernel_once(tmp_path):
    ctx = mp.get_context("spawn")
    ranks = 3
    barrier = ctx.Barrier(ranks)
    results = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(str(tmp_path / "cache"), barrier, results)) for _ in range(ranks)]
    for p in procs:
        p.start()
    stats = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(s["compiles"] for s in stats) == len(SPECS)
    assert all(s["compiles"] + s["disk_hits"] == len(SPECS) for s in stats)
