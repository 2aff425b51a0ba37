"""Host cost of the torch op path on the CPU (no GPU needed): what an eager ``torch.ops.mxjit`` call
spends in the dispatcher and mxjit's Python code besides the kernel, next to one eager ``torch.add``.

    python bench/python/bench_host.py [--iters N]

Prints the fastest of 15 loops (a shared host's load only adds time), in microseconds per call, on CPU tensors (a 4x32 bf16, so that the
kernel itself is small):
  op            torch.ops.mxjit.to_mxfp8_dim0(x)   (dispatcher + memoized spec + allocation + run_host)
  run_host      the same Kernel's run_host on preallocated outputs (the kernel and its binding only)
  op path       op - run_host: what the Python op path adds (the part bench_torch.py's eager op pays
                on a GPU before its launch)
  torch.add     torch.add(x, x)
The GPU machine's CPU is faster than a shared build host: compare ratios, not microseconds.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

import mxjit
import mxjit.torch  # noqa: F401  (registers the ops)


def loop_us(fn, iters: int) -> float:
    for _ in range(iters // 4):
        fn()
    best = float("inf")
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) * 1e6 / iters)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=2000)
    a = ap.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    op = torch.ops.mxjit.to_mxfp8_dim0.default
    k = mxjit.jit(mxjit.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)"))
    q = torch.empty(4, 32, dtype=torch.uint8)
    s = torch.empty(4, 1, dtype=torch.uint8)
    ptrs = (x.data_ptr(), q.data_ptr(), s.data_ptr())
    shapes = ((4, 32), (4, 32), (4, 1))
    strides = ((32, 1), (32, 1), (1, 1))
    k.run_host(ptrs, shapes, strides, None, 1)
    op_us = loop_us(lambda: op(x), a.iters)
    host_us = loop_us(lambda: k.run_host(ptrs, shapes, strides, None, 1), a.iters)
    add_us = loop_us(lambda: torch.add(x, x), a.iters)
    print(f"host cost per call on the CPU (torch {torch.__version__}, mxjit CPU backend {mxjit._mxjit.cpu_backend()})")
    for name, us in (("op torch.ops.mxjit.to_mxfp8_dim0 (4x32)", op_us), ("run_host of its Kernel", host_us),
                     ("op path (op - run_host)", op_us - host_us), ("torch.add (4x32)", add_us)):
        print(f"  {name:<42} {us:8.2f} us")
    print(f"  op path / torch.add: {(op_us - host_us) / add_us:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
