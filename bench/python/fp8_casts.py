"""The four casts of torchao's FP8-rowwise grouped-GEMM recipe (``_Float8GroupedMM``), as a swappable set:
torchao's Triton kernels, or mxjit's ops. moe_step.py runs the same autograd function on either set;
peers.py times them side by side.

    rowwise_2d(x)              (M, K) -> FP8 row-major, FP32 multiplier per row (M, 1)
    colwise_3d(b_t)            B_t (E, K, N) column-major -> FP8 same layout, multipliers (E, 1, N) over K
    rowwise_3d_transpose(b_t)  B_t -> B (E, N, K), per-expert column-major, multipliers (E, K) over N
    per_group_colwise_dual(a, b, offs)   (M, *) jagged row groups -> FP8 column-major, (cols*G,) each

Every scale is torchao's multiplier ``448 / max(amax, 1e-12)`` rounded down to a power of two.

mxjit has no whole-axis (rowwise / colwise) FP32 scale yet: issue 34 builds it. Until then the whole-axis
casts here run mxjit's per-group FP8 ops with one group spanning the axis -- the same scale (the amax of
the whole row or column) from an mxjit kernel, not a torch op. ``MXJIT_NOTES`` says which cast goes
through which op; the functions named ``*_mxjit`` are the hooks that issue 34's casts replace.
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
    "rowwise_2d: mxjit fp8_per_group_rowwise_scales with one group spanning the row (issue 34: whole-axis scales)",
    "colwise_3d: the same op on B_t's memory as (E*N, K) rows, one group spanning K (issue 34)",
    "rowwise_3d_transpose: the per-group colwise kernel once per expert (one group spanning N), writing the "
    "(E, N, K) per-expert column-major output in place (issue 34: whole-axis blocks; issue 35: both weight casts "
    "from one read)",
    "per_group_colwise_dual: mxjit fp8_per_group_colwise_scales, once per tensor (two reads, as torchao's dual)",
]


def rowwise_2d_mxjit(x: torch.Tensor, dtype=E4M3, pow2: bool = True):
    """(M, K) row-major -> (FP8 (M, K) row-major, FP32 (M, 1)): torchao's triton_fp8_rowwise_2d_scale_and_cast."""
    import mxjit.torch as mxt  # noqa: PLC0415

    ends = torch.full((1,), x.shape[1], dtype=torch.int32, device=x.device)
    q, s = mxt.fp8_per_group_rowwise_scales(x, ends, dtype, pow2)
    return q, s.view(-1, 1)


def colwise_3d_mxjit(bt: torch.Tensor, dtype=E4M3, pow2: bool = True):
    """B_t (E, K, N) strides (K*N, 1, K) -> (FP8 same shape and strides, FP32 (E, 1, N)):
    torchao's triton_fp8_colwise_3d_scale_and_cast. In memory B_t is (E*N, K) row-major: a row cast."""
    e, k, n = bt.shape
    rows = bt.transpose(-2, -1).reshape(e * n, k)  # a view for a column-major B_t
    q, s = rowwise_2d_mxjit(rows, dtype, pow2)
    return q.view(e, n, k).transpose(-2, -1), s.view(e, 1, n)


def rowwise_3d_transpose_mxjit(bt: torch.Tensor, dtype=E4M3, pow2: bool = True):
    """B_t (E, K, N) column-major -> (B (E, N, K) FP8 strides (N*K, 1, N), FP32 (E, K)):
    torchao's triton_fp8_rowwise_3d_transpose_rhs.

    Per expert this is mxjit's per-group colwise cast of B[e] (N, K) with one group spanning N, whose codes
    come out column-major (strides (1, N)) -- expert e's slice of the 3-D output. mxjit generates jagged
    kernels for rank-2 casts only (a rank-3 pipeline with groups runs on the CPU reference), so this
    launches that rank-2 kernel once per expert, writing straight into the 3-D output (no copy)."""
    from mxjit.torch import _launch, _ops  # noqa: PLC0415

    e, k, n = bt.shape
    b = bt.transpose(-2, -1)  # (E, N, K), row-major in memory
    ends = torch.full((1,), n, dtype=torch.int32, device=bt.device)
    q = torch.empty_strided((e, n, k), (n * k, 1, n), dtype=dtype, device=bt.device)
    s = torch.empty((e, k), dtype=torch.float32, device=bt.device)
    if e == 0:
        return q, s
    # One plan (spec, checks, prepared launch) for expert 0's geometry; every expert has the same.
    plan = _launch._plan(lambda be, en: _ops.fp8_per_group_colwise_scales_spec(be, en, dtype, pow2), (b[0], ends))
    assert plan.written == (0, 1), "outputs changed"
    oq, os_ = plan.spec.outs[0], plan.spec.outs[1]
    assert (oq.view_shape, oq.view_strides) == ((n, k), (1, n)) and os_.view_shape == (1, k), "layout changed"
    for i in range(e):
        _launch.run(plan, [b[i], ends], [q[i], s[i]])
    return q, s


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
