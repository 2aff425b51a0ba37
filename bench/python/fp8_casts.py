"""The four casts of torchao's FP8-rowwise grouped-GEMM recipe (``_Float8GroupedMM``), as a swappable set:
torchao's Triton kernels, or mxjit's ops. moe_step.py runs the same autograd function on either set;
peers.py times them side by side.

    rowwise_2d(x)              (M, K) -> FP8 row-major, FP32 multiplier per row (M, 1)
    colwise_3d(b_t)            B_t (E, K, N) column-major -> FP8 same layout, multipliers (E, 1, N) over K
    rowwise_3d_transpose(b_t)  B_t -> B (E, N, K), per-expert column-major, multipliers (E, K) over N
    per_group_colwise_dual(a, b, offs)   (M, *) jagged row groups -> FP8 column-major, (cols*G,) each

Every scale is torchao's multiplier ``448 / max(amax, 1e-12)`` rounded down to a power of two.

mxjit's whole-axis casts are one pipeline each (``blocks(x, axis, whole)``): the rows kernel on the GPU,
the LLVM backend on the CPU. ``MXJIT_NOTES`` says which cast goes through which kernel.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import torch

E4M3 = torch.float8_e4m3fn


class Casts(NamedTuple):
    name: str
    rowwise_2d: Callable
    colwise_3d: Callable
    rowwise_3d_transpose: Callable
    per_group_colwise_dual: Callable


# ---- torchao's ----

def torchao_casts() -> Casts:
    from torchao.prototype.moe_training import kernels as k  # noqa: PLC0415

    return Casts(
        "torchao",
        lambda x: k.triton_fp8_rowwise_2d_scale_and_cast(x, E4M3, True),
        lambda bt: k.triton_fp8_colwise_3d_scale_and_cast(bt, E4M3, True),
        lambda bt: k.triton_fp8_rowwise_3d_transpose_rhs(bt, E4M3, True),
        lambda a, b, offs: k.triton_fp8_per_group_colwise_scales_dual(a, b, offs, E4M3, True))


# ---- mxjit's ----

MXJIT_NOTES = [
    "rowwise_2d: one pipeline, blocks(x, 1, whole): the rows kernel along each row (issue 34)",
    "colwise_3d: blocks(b_t, 1, whole) on B_t (E, K, N) column-major: the rows kernel along K, B_t's unit axis",
    "rowwise_3d_transpose: blocks(b_t, 2, whole) with row-major codes over (E, K, N) = B (E, N, K) per-expert "
    "column-major: the rows kernel across lines (lanes along K, warps along N; issue 35: both weight casts "
    "from one read)",
    "per_group_colwise_dual: mxjit fp8_per_group_colwise_scales, once per tensor (two reads, as torchao's dual)",
]

_PIPELINES: dict = {}


def _whole_axis(rank: int, axis: int, dtype, pow2: bool, q_layout=None):
    """FP8 codes and torchao's FP32 multipliers over whole lines along `axis` (cached per signature)."""
    import mxjit as mx  # noqa: PLC0415

    key = (rank, axis, dtype, pow2, q_layout)
    if key not in _PIPELINES:
        elem = {torch.float8_e4m3fn: mx.e4m3, torch.float8_e5m2: mx.e5m2}[dtype]
        x = mx.input("x", mx.bf16, rank)
        s = mx.f32_scale(mx.amax(mx.blocks(x, axis, mx.whole)), elem, store_multiplier=True, pow2=pow2)
        q = mx.output("q", mx.cast(elem, x / s)) if q_layout is None else mx.output("q", mx.cast(elem, x / s), q_layout)
        _PIPELINES[key] = mx.pipeline([q, mx.output("s", s)])
    return _PIPELINES[key]


def _codes(q: torch.Tensor, dtype) -> torch.Tensor:
    return q if q.dtype == dtype else q.view(dtype)


def rowwise_2d_mxjit(x: torch.Tensor, dtype=E4M3, pow2: bool = True):
    """(M, K) row-major -> (FP8 (M, K) row-major, FP32 (M, 1)): torchao's triton_fp8_rowwise_2d_scale_and_cast."""
    import mxjit.torch as mxt  # noqa: PLC0415

    q, s = mxt.run(_whole_axis(2, 1, dtype, pow2), x)
    return _codes(q, dtype), s.view(-1, 1)


def colwise_3d_mxjit(bt: torch.Tensor, dtype=E4M3, pow2: bool = True):
    """B_t (E, K, N) strides (K*N, 1, K) -> (FP8 same shape and strides, FP32 (E, 1, N)):
    torchao's triton_fp8_colwise_3d_scale_and_cast: one scale per (e, n) over the whole K axis."""
    import mxjit as mx  # noqa: PLC0415
    import mxjit.torch as mxt  # noqa: PLC0415

    e, k, n = bt.shape
    q, s = mxt.run(_whole_axis(3, 1, dtype, pow2, mx.layout.permuted([0, 2, 1])), bt)
    q = _codes(q, dtype)
    if q.shape != (e, k, n):  # the codes' storage in their layout: (E, N, K) in memory
        q = q.view(e, n, k).transpose(-2, -1)
    return q, s.view(e, 1, n)


def rowwise_3d_transpose_mxjit(bt: torch.Tensor, dtype=E4M3, pow2: bool = True):
    """B_t (E, K, N) column-major -> (B (E, N, K) FP8 strides (N*K, 1, N), FP32 (E, K)):
    torchao's triton_fp8_rowwise_3d_transpose_rhs: one scale per (e, k) over the whole N axis, the codes
    row-major over B_t's (E, K, N), which is B (E, N, K) per-expert column-major."""
    import mxjit.torch as mxt  # noqa: PLC0415

    e, k, n = bt.shape
    q, s = mxt.run(_whole_axis(3, 2, dtype, pow2), bt)
    return _codes(q, dtype).view(e, k, n).transpose(-2, -1), s.view(e, k)


def per_group_colwise_dual_mxjit(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, dtype=E4M3,
                                 pow2: bool = True):
    """torchao's triton_fp8_per_group_colwise_scales_dual: both tensors cast with per-group column scales."""
    import mxjit.torch as mxt  # noqa: PLC0415

    qa, sa = mxt.fp8_per_group_colwise_scales(a, offs, dtype, pow2)
    qb, sb = mxt.fp8_per_group_colwise_scales(b, offs, dtype, pow2)
    return qa, sa, qb, sb


def mxjit_casts() -> Casts:
    return Casts("mxjit", rowwise_2d_mxjit, colwise_3d_mxjit, rowwise_3d_transpose_mxjit, per_group_colwise_dual_mxjit)


# ---- torchao's torch references ----

def per_group_reference(x: torch.Tensor, offs: torch.Tensor, colwise: bool, dtype=E4M3, pow2: bool = True):
    """torchao's torch_to_float8_per_group_colwise / _rowwise, which fail on an empty group: run on the non-empty
    groups, with an empty group's scales those of amax 0 (as torchao's Triton kernels give). Codes as the
    Triton kernels lay them out (colwise: column-major)."""
    from torchao.float8.float8_utils import amax_to_scale  # noqa: PLC0415
    from torchao.prototype.moe_training import utils as mu  # noqa: PLC0415

    ends = offs.tolist()
    keep = [i for i, e in enumerate(ends) if e > (ends[i - 1] if i else 0)]
    fn = mu.torch_to_float8_per_group_colwise if colwise else mu.torch_to_float8_per_group_rowwise
    q, s = fn(x, offs[keep], dtype, pow2)
    n = x.shape[1] if colwise else x.shape[0]
    full = amax_to_scale(torch.zeros(n, device=x.device), dtype, pow2).repeat(len(ends))
    for j, g in enumerate(keep):
        full[g * n:(g + 1) * n] = s[j * n:(j + 1) * n]
    return (q.t().contiguous().t() if colwise else q), full


def reference_casts() -> Casts:
    """torchao's torch references: tensor_to_scale + to_fp8_saturated (rowwise, colwise 3-D),
    torch_to_3d_rowwise_float8_transpose_rhs, torch_to_float8_per_group_colwise (per_group_reference)."""
    from torchao.float8.config import ScalingGranularity  # noqa: PLC0415
    from torchao.float8.float8_utils import tensor_to_scale, to_fp8_saturated  # noqa: PLC0415
    from torchao.prototype.moe_training import utils as mu  # noqa: PLC0415

    def axiswise(x, dim):
        s = tensor_to_scale(x, E4M3, scaling_granularity=ScalingGranularity.AXISWISE, axiswise_dim=dim,
                            round_scales_to_power_of_2=True)
        return to_fp8_saturated(x.to(torch.float32) * s, E4M3), s

    def colwise_3d(b_t):
        q, s = axiswise(b_t, -2)
        return q.transpose(-2, -1).contiguous().transpose(-2, -1), s

    def rowwise_3d_transpose(b_t):
        q, s = mu.torch_to_3d_rowwise_float8_transpose_rhs(b_t, E4M3, True)
        return q, s.reshape(b_t.shape[0], b_t.shape[1])

    def dual(a, b, offs):
        qa, sa = per_group_reference(a, offs, True)
        qb, sb = per_group_reference(b, offs, True)
        return qa, sa, qb, sb

    return Casts("reference", lambda x: axiswise(x, -1), colwise_3d, rowwise_3d_transpose, dual)
