"""mxjit from PyTorch on a GPU: host cost per call and kernel times, all in one run (issue 32's targets).

    python bench/python/bench_torch.py [--cli build/tools/mxjit] [--device 0] [--quick]

Prints, for the same process and GPU:
  1. host cost per launch (medians of 5 loops): a bare cuLaunchKernel loop of an empty kernel (C++),
     mxjit's C++ Kernel launch on a cache hit, the binding's Kernel.launch from Python ints (target: bare
     + 1 us), an eager torch.ops.mxjit call and an eager torch.add on a small tensor (target: mxjit <= 2.3x
     add), and a CUDA-graph replay of N captured mxjit ops (target: no host cost per op);
  2. kernel times (CUDA events, median over rotating inputs larger than L2) of the same kernels through
     the torch ops and through the C++ benchmark (`mxjit bench`, run as a subprocess on the same GPU).
Needs torch with CUDA and a GPU; the C++ part needs the `mxjit` tool (skipped with a note when absent).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import mxjit
import mxjit.torch as mxt


def host_loop_us(fn, iters=2000, reps=5, sync=None):
    """Median host microseconds per call of fn() over `reps` loops (GPU drained between loops)."""
    sync = sync or torch.cuda.synchronize
    for _ in range(iters // 4):
        fn()
    sync()
    per = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        per.append((time.perf_counter() - t0) * 1e6 / iters)
        sync()
    return statistics.median(per)


def host_costs(dev: int) -> None:
    print(f"== host cost per call ({torch.cuda.get_device_name(dev)}, torch {torch.__version__}) ==")
    stream = torch.cuda.current_stream(dev).cuda_stream
    raw = mxjit._mxjit._bench_raw_launch_us(dev, stream)
    x = torch.randn(128, 128, dtype=torch.bfloat16, device=f"cuda:{dev}")
    # The Kernel of the torch op to_mxfp8_dim0 (bf16 -> MXFP8 along rows, linear scales), called directly.
    p = mxjit.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)")
    k = mxjit.jit(p)
    q = torch.empty(128, 128, dtype=torch.uint8, device=x.device)
    s = torch.empty(128, 4, dtype=torch.uint8, device=x.device)
    ptrs = (x.data_ptr(), q.data_ptr(), s.data_ptr())
    shapes = ((128, 128), (128, 128), (128, 4))
    strides = ((128, 1), (128, 1), (4, 1))
    k.launch(stream, dev, ptrs, shapes, strides)
    dispatch = k._bench_dispatch_us(stream, dev, ptrs, shapes, strides)
    binding = host_loop_us(lambda: k.launch(stream, dev, ptrs, shapes, strides))
    op = torch.ops.mxjit.to_mxfp8_dim0.default
    eager_op = host_loop_us(lambda: op(x))
    eager_add = host_loop_us(lambda: torch.add(x, x))
    # CUDA graph: n captured ops, replayed; host time per replay and per captured op.
    n = 32
    side = torch.cuda.Stream(dev)
    side.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(side):
        for _ in range(3):
            op(x)
    torch.cuda.current_stream(dev).wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            op(x)
    replay = host_loop_us(g.replay, iters=200)
    rows = [
        ("bare cuLaunchKernel, empty kernel (C++ loop)", raw, ""),
        ("mxjit Kernel launch on a cache hit (C++ loop)", dispatch, f"+{dispatch - raw:.2f} us vs bare"),
        ("binding Kernel.launch from Python ints", binding,
         f"+{binding - raw:.2f} us vs bare (target <= +1.00): {'OK' if binding - raw <= 1.0 else 'MISSED'}"),
        ("eager torch.ops.mxjit.to_mxfp8_dim0 (128x128)", eager_op,
         f"{eager_op / eager_add:.2f}x torch.add (target <= 2.30): {'OK' if eager_op <= 2.3 * eager_add else 'MISSED'}"),
        ("eager torch.add (128x128)", eager_add, ""),
        (f"CUDA graph replay of {n} mxjit ops, per replay", replay, f"{replay / n:.3f} us per captured op"),
    ]
    for name, us, note in rows:
        print(f"  {name:<48} {us:8.2f} us   {note}")


def event_time_us(fn, inputs, reps=20, rounds=5):
    """GPU microseconds per fn(x), cycling over `inputs`: CUDA events around `reps` back-to-back calls
    (the host enqueues ahead, so its time hides behind the kernels), median over `rounds`."""
    for x in inputs[:2]:
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(reps):
            fn(inputs[i % len(inputs)])
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / reps)
    return statistics.median(times)


# (name in `mxjit bench`, shape, the torch call running the same pipeline)
KERNELS = [
    ("dim0 e4m3 rceil linear", (16384, 16384), lambda x: mxt.to_mxfp8_dim0(x)),
    ("dim0 e4m3 rceil blocked", (16384, 16384), lambda x: mxt.quantize(x, scale_layout="blocked")),
    ("dim1 e4m3 rceil linear", (16384, 16384),
     lambda x: mxt.quantize(x, "e4m3", 32, 0, "rceil", "col_major", "linear")),
    ("dim1 e4m3 rceil blocked", (16384, 16384), lambda x: mxt.to_mxfp8_dim1(x, scale_layout="blocked")),
    ("dim0+dim1 linear", (16384, 16384), lambda x: mxt.mxfp8_quantize(x, True, True)),
    ("dim0+dim1 blocked", (16384, 16384), lambda x: mxt.mxfp8_quantize(x, True, True, scale_layout="blocked")),
    ("dim0 mxfp4 e2m1 floor", (16384, 16384), lambda x: mxt.quantize(x, "e2m1", 32, -1, "floor")),
    ("dim0 e4m3 rceil linear", (8192, 5120), lambda x: mxt.to_mxfp8_dim0(x)),
    ("dim1 e4m3 rceil linear", (8192, 5120), lambda x: mxt.quantize(x, "e4m3", 32, 0, "rceil", "col_major", "linear")),
]


def cli_times(cli: str, dev: int) -> dict:
    """{(case, 'MxN'): us} from `mxjit bench --no-small` on the same GPU (CUDA_VISIBLE_DEVICES=dev)."""
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "bench")
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(dev)}
        subprocess.run([cli, "bench", "--no-small", "--out", prefix], check=True, env=env, stdout=subprocess.DEVNULL)
        with open(prefix + ".csv") as f:
            return {(r["case"], r["shape"]): float(r["us"]) for r in csv.DictReader(f)}


def kernel_times(dev: int, cli: str | None, quick: bool) -> None:
    print("\n== kernel times: torch ops vs the C++ benchmark (same kernels, same GPU) ==")
    ref = {}
    if cli and os.path.exists(cli):
        ref = cli_times(cli, dev)
    else:
        print(f"  (no `mxjit` tool at {cli}: C++ column left empty)")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    print(f"  {'case':<26} {'shape':>12} {'torch op us':>12} {'C++ bench us':>13} {'ratio':>7}")
    for name, shape, fn in KERNELS[: 3 if quick else None]:
        nbytes = shape[0] * shape[1] * 2
        count = max(2, -(-4 * l2 // nbytes))  # rotate over inputs larger than L2 together
        inputs = [torch.randn(shape, dtype=torch.bfloat16, device=f"cuda:{dev}") for _ in range(min(count, 8))]
        us = event_time_us(fn, inputs)
        c = ref.get((name, f"{shape[0]}x{shape[1]}"))
        ratio = f"{us / c:6.3f}" if c else ""
        print(f"  {name:<26} {shape[0]:>6}x{shape[1]:<5} {us:12.2f} {c if c else float('nan'):13.2f} {ratio:>7}")
        del inputs
        torch.cuda.empty_cache()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "tools", "mxjit"))
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="three kernels only")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench_torch: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.cuda.set_device(a.device)
    host_costs(a.device)
    kernel_times(a.device, a.cli, a.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
