"""mxjit from PyTorch: ``import mxjit.torch`` registers the ops ``torch.ops.mxjit.*``.

Each function below calls its op (``torch.ops.mxjit.<name>.default``), so it works in eager mode, under
``torch.compile(fullgraph=True)`` (also ``dynamic=True``) and in CUDA graphs. Outputs come from torch's
allocator in the declared layouts; kernels run on torch's current stream of the input's device; CPU
tensors run the LLVM CPU backend (the reference where it does not lower a cast). Every op returns
(data, scale); ``mxjit.torch.compat.torchao`` has torchao's exact entry points (``to_mx`` returns
(scale, data)) and ``patch_torchao()``.

    import torch, mxjit.torch as mxt
    q, s = mxt.to_mxfp8_dim1(x)                        # (M, K) e4m3 column-major, (K, M/32) e8m0
    q, s = mxt.quantize(x, "e2m1", 32, scale_layout="blocked")   # MXFP4, scales for the GEMM
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import torch

import mxjit

from . import _ops
from ._ops import register_pipeline

_ops_ns = torch.ops.mxjit
_quantize = _ops_ns.quantize.default
_dim0 = _ops_ns.to_mxfp8_dim0.default
_dim1 = _ops_ns.to_mxfp8_dim1.default
_dim01 = _ops_ns.mxfp8_quantize.default
_q3d = _ops_ns.mxfp8_quantize_3d.default
_grouped = _ops_ns.quantize_grouped.default
_colwise = _ops_ns.fp8_per_group_colwise_scales.default
_rowwise = _ops_ns.fp8_per_group_rowwise_scales.default
_nvfp4 = _ops_ns.nvfp4_quantize.default
_dequant = _ops_ns.dequantize.default
_rearrange = _ops_ns.mx_block_rearrange.default
_run = _ops_ns.run.default


def quantize(x: torch.Tensor, elem: str = "e4m3", block_size: int = 32, axis: int = -1, scaling_mode: str = "rceil",
             data_layout: str = "row_major", scale_layout: str = "linear", nan_policy: str = "nan_block",
             fp4x2: bool = False):
    """Any MX cast: blocks of `block_size` along `axis`, E8M0 scales by `scaling_mode` (floor, rceil,
    ceil, even), codes in `data_layout` (row_major, col_major, expert_col_major), scales "linear" or
    "blocked" (128x4). Returns (data, scale)."""
    return _quantize(x, elem, block_size, axis, scaling_mode, data_layout, scale_layout, nan_policy, fp4x2)


def to_mxfp8_dim0(x: torch.Tensor, inner_block_size: int = 32, scaling_mode: str = "rceil"):
    """MXFP8 along the last axis: (data e4m3 as x, scale e8m0 (*lead, K/bs))."""
    return _dim0(x, inner_block_size, scaling_mode)


def to_mxfp8_dim1(x: torch.Tensor, inner_block_size: int = 32, scaling_mode: str = "rceil",
                  scale_layout: str = "linear"):
    """MXFP8 of a 2-D (M, K) along dim 0, no transpose copy: (data (M, K) strides (1, M), scale
    (K, M/bs) row-major, or blocked 128x4 with rows K)."""
    return _dim1(x, inner_block_size, scaling_mode, scale_layout)


def mxfp8_quantize(x: torch.Tensor, rowwise: bool = False, colwise: bool = True, scaling_mode: str = "rceil",
                   block_size: int = 32, scale_layout: str = "linear"):
    """dim0 and/or dim1 MXFP8 of a 2-D tensor, both from one read when both are asked for:
    (data_rowwise, data_colwise, scales_rowwise, scales_colwise) as torchao's mxfp8_quantize_cuda."""
    return _dim01(x, rowwise, colwise, scaling_mode, block_size, scale_layout)


def mxfp8_quantize_3d(x: torch.Tensor, block_size: int = 32, scale_block_dim1: int = 32, scale_block_dim2: int = 1,
                      scaling_mode: str = "rceil", blocked_scale_output: bool = True):
    """MoE expert weights (E, N, K) cast along N (32x1) or in 32x32 tiles, codes per-expert
    column-major (strides (N*K, 1, N)); scales blocked per expert (E, pad128(K)*pad4(N/32)) or plain."""
    return _q3d(x, block_size, scale_block_dim1, scale_block_dim2, scaling_mode, blocked_scale_output)


def quantize_grouped(x: torch.Tensor, offsets: torch.Tensor, elem: str = "e4m3", block_size: int = 32,
                     axis: int = 1, scaling_mode: str = "rceil"):
    """An MX cast of 2-D (M, K) whose scales are written per token group (int32 row ends `offsets`)
    in 128x4 blocks: axis=1 (dim0) gives (roundup(M,128) + 128*G, pad4(K/bs)) scales with each group at
    a 128-row boundary; axis=0 (dim1, codes column-major) gives (roundup(K,128), pad4(M/bs) + 4*G) with
    each group's scale columns at a 4-column boundary (group ends must be multiples of block_size).
    Padding is zero; rows / columns past the last group belong to none."""
    return _grouped(x, offsets, elem, block_size, axis, scaling_mode)


def fp8_per_group_colwise_scales(x: torch.Tensor, offsets: torch.Tensor,
                                 output_dtype: torch.dtype = torch.float8_e4m3fn,
                                 round_scales_to_power_of_2: bool = False):
    """FP8 of (K, N) with one FP32 scale per column per row group: (data (K, N) strides (1, K),
    scales (N*G,) group-major). Scales are torchao's multipliers r = max / max(amax, 1e-12)."""
    return _colwise(x, offsets, output_dtype, round_scales_to_power_of_2)


def fp8_per_group_rowwise_scales(x: torch.Tensor, offsets: torch.Tensor,
                                 output_dtype: torch.dtype = torch.float8_e4m3fn,
                                 round_scales_to_power_of_2: bool = False):
    """FP8 of (M, K) with one FP32 scale per row per column group (`offsets`: column ends):
    (data row-major, scales (M*G,) group-major)."""
    return _rowwise(x, offsets, output_dtype, round_scales_to_power_of_2)


def nvfp4_quantize(x: torch.Tensor, convention: str = "torchao", scale_layout: str = "linear", fp4x2: bool = False):
    """NVFP4 along the last axis (16-element blocks): (data packed uint8 (..., K/2), E4M3 block scales,
    the FP32 tensor amax (1,)). `convention`: "torchao" or "te" (docs/numerics.md)."""
    return _nvfp4(x, convention, scale_layout, fp4x2)


def dequantize(data: torch.Tensor, scale: torch.Tensor, elem: str = "e4m3", block_size: int = 32, axis: int = -1,
               out_dtype: torch.dtype = torch.bfloat16):
    """Codes and their linear scales (E8M0, E4M3 or FP32) back to values."""
    return _dequant(data, scale, elem, block_size, axis, out_dtype)


def mx_block_rearrange(scales: torch.Tensor) -> torch.Tensor:
    """Existing [..., R, C] scale bytes into 128x4 blocks: (..., roundup(R,128), roundup(C,4)), padding zero."""
    return _rearrange(scales)


def run(pipeline, *inputs: torch.Tensor, fp4x2: bool = False) -> list:
    """Runs any pipeline (an mxjit.Pipeline or its text form) on torch tensors; returns its outputs in
    the declared layouts (blocked scales as their 1-D storage)."""
    name = register_pipeline(pipeline) if isinstance(pipeline, mxjit.Pipeline) else pipeline
    return _run(name, list(inputs), fp4x2)


def warmup(calls: Iterable[tuple], devices: Optional[Sequence[int]] = None) -> None:
    """Compiles (or loads from the cache) the kernels of `calls` ahead of use, e.g. before a CUDA-graph
    capture or a timed step: each call is ``(fn, args...)`` run once on the example tensors given (any
    values), first on a side stream so nothing is queued on the caller's streams."""
    for call in calls:
        fn, args = call[0], call[1:]
        dev = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        if dev.type == "cuda":
            with torch.cuda.device(dev), torch.cuda.stream(torch.cuda.Stream(dev)):
                fn(*args)
            torch.cuda.synchronize(dev)
        else:
            fn(*args)


__all__ = [
    "dequantize", "fp8_per_group_colwise_scales", "fp8_per_group_rowwise_scales", "mx_block_rearrange",
    "mxfp8_quantize", "mxfp8_quantize_3d", "nvfp4_quantize", "quantize", "quantize_grouped", "register_pipeline",
    "run", "to_mxfp8_dim0", "to_mxfp8_dim1", "warmup",
]
