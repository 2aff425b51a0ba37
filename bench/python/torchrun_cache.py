"""Several ranks, one host, one fresh kernel cache: each kernel is compiled once per host.

    torchrun --nproc-per-node 2 bench/python/torchrun_cache.py [--cache-dir DIR] [--steps 3]

Rank 0 empties the cache folder (default /tmp/mxjit_torchrun_cache), all ranks meet at a barrier, then
each runs the same "training step" of mxjit casts (dim0, dim1, dim0+dim1, 3-D experts, grouped scales,
per-group FP8, NVFP4) on its own GPU, starting together. Printed per rank: NVRTC compiles in this
process, SQLite hits, time to the first step (cold: compile or load) and the median of later steps.
Expected: the compiles of all ranks add up to the number of distinct kernels (the first rank to miss a
kernel compiles it under a cross-process claim; the other finds it in SQLite), and every rank's hits +
compiles cover all kernels.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time

import torch
import torch.distributed as dist


def step(dev: torch.device, x, w, offs):
    import mxjit.torch as mxt

    out = []
    out += mxt.to_mxfp8_dim0(x)
    out += mxt.to_mxfp8_dim1(x)
    out += mxt.mxfp8_quantize(x, True, True)
    out += mxt.mxfp8_quantize_3d(w)
    out += mxt.quantize_grouped(x, offs)
    out += mxt.fp8_per_group_colwise_scales(x, offs, torch.float8_e4m3fn, True)
    out += mxt.nvfp4_quantize(x, "torchao", "blocked")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", default="/tmp/mxjit_torchrun_cache")
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    if rank == 0:
        shutil.rmtree(a.cache_dir, ignore_errors=True)
        os.makedirs(a.cache_dir, mode=0o700)
    dist.barrier()
    os.environ["MXJIT_CACHE_DIR"] = a.cache_dir  # before mxjit opens its cache (first compile)
    import mxjit

    x = torch.randn(8192, 5120, dtype=torch.bfloat16, device=dev)
    w = torch.randn(8, 1024, 2048, dtype=torch.bfloat16, device=dev)
    offs = torch.tensor([1024, 3072, 3072, 8192], dtype=torch.int32, device=dev)
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    step(dev, x, w, offs)
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    later = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step(dev, x, w, offs)
        torch.cuda.synchronize()
        later.append((time.perf_counter() - t0) * 1e3)
    s = mxjit.cache_stats()
    row = [rank, s["compiles"], s["disk_hits"], s["disk_misses"], first_ms, statistics.median(later)]
    rows = [None] * dist.get_world_size()
    dist.all_gather_object(rows, row)
    if rank == 0:
        print(f"{'rank':>4} {'NVRTC compiles':>15} {'SQLite hits':>12} {'SQLite misses':>14} "
              f"{'first step ms':>14} {'later steps ms':>15}")
        for r in rows:
            print(f"{r[0]:>4} {r[1]:>15} {r[2]:>12} {r[3]:>14} {r[4]:>14.1f} {r[5]:>15.2f}")
        total = sum(r[1] for r in rows)
        kernels = max(r[1] + r[2] for r in rows)
        print(f"compiles on this host: {total} for {kernels} distinct kernels "
              f"({'each compiled once' if total == kernels else 'SOME COMPILED MORE THAN ONCE'}); "
              f"cache {a.cache_dir}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
