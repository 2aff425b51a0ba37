"""SGLang's FP8 per-token-group cast with its exact signature, output shapes, strides and dtypes
(``sglang_per_token_group_quant_fp8`` in SGLang's ``fp8_kernel.py``), running on mxjit::

    from mxjit.torch.compat.sglang import sglang_per_token_group_quant_fp8
    x_q, x_s = sglang_per_token_group_quant_fp8(x, 128, column_major_scales=True, scale_tma_aligned=True,
                                                masked_m=masked_m)    # x [E, T, K], masked_m [E] int32

Numerics (shared/research/blockwise_fp8_peers.md §3): the v1 CUDA kernel as built for sm_100 (precise
division; SGLang's sm_90 build divides with fast math, so its bytes on Hopper differ for some amaxes):
``scale_inv = RN(amax * RN(1/448))`` stored, elements ``cvt.satfinite(RN(x * RN(448 / amax)))``, the amax
floored at eps by ``fmaxf`` (NaN dropped); ``scale_ue8m0`` rounds scale_inv up to a power of two by its
exponent bits and stores the exponent bytes four to an int32 word. SGLang runs ``fuse_silu_and_mul`` and
``masked_m`` on its v2 kernel only, which clamps the scaled elements to +-448 first (a NaN element becomes
-448, 0xFE, where v1 writes 0x7F); ``enable_v2`` picks v2 for the other calls too (SGLang's
``SGLANG_PER_TOKEN_GROUP_QUANT_8BIT_V2``).

Scale layouts (``x_s``), for ``x`` of shape ``(*batch, mn, K)`` and ``G = K / group_size``:

* default: FP32 ``(*batch, mn, G)`` row-major;
* ``column_major_scales``: FP32 ``(*batch, mn, G)`` with the groups outermost (2-D: strides ``(1, mn)``);
* ``+ scale_tma_aligned``: FP32 with strides ``(..., 1, A)``, ``A = roundup(mn, 4)``: the MN-major
  TMA-aligned layout DeepGEMM's SM90 GEMMs read; rows ``[mn, A)`` of the storage are zero;
* ``+ scale_ue8m0`` (needs both flags above): int32 ``(*batch, mn, roundup(G, 4) / 4)`` with strides
  ``(..., 1, A)``, byte ``i`` of word ``w`` the exponent of group ``4w + i`` (DeepGEMM's SM100 layout).

With ``masked_m`` (``x`` of shape ``(E, T, K)``, ``masked_m`` int32 ``(E,)``) only the first ``masked_m[e]``
rows of expert ``e`` are read and written; the others hold what ``torch.empty`` gave them, as in SGLang
(aligned scale layouts are zeroed whole first). Where SGLang's kernels refuse an argument (eps other than
1e-10, UE8M0 without column-major TMA-aligned scales, K not a multiple of the group size) this raises
ValueError naming it.
"""

from __future__ import annotations

import functools
from typing import Optional, Tuple

import torch

import mxjit

from .. import run as _run

_DTYPES = {torch.bfloat16: mxjit.bf16, torch.float16: mxjit.f16, torch.float32: mxjit.f32}
_OP = "sglang_per_token_group_quant_fp8"


@functools.lru_cache(maxsize=None)
def _pipeline(dtype, rank: int, group_size: int, column_major: bool, tma_aligned: bool, ue8m0: bool, fuse: bool,
              v2: bool, masked: bool) -> mxjit.Pipeline:
    dt = _DTYPES[dtype]
    if fuse:  # SGLang's v2: T val = T(silu(gate)) * up, kept in the input's type
        gate, up = mxjit.input("gate", dt, rank), mxjit.input("up", dt, rank)
        v = mxjit.round_to(mxjit.round_to(mxjit.silu(gate), dt) * up, dt)
    else:
        v = mxjit.input("x", dt, rank)
    d = mxjit.recipes.sglang_group(mxjit.e4m3, ue8m0)
    if v2:
        d.clamp, d.clamp_lo, d.clamp_hi = mxjit.Clamp.ignore_nan, -448.0, 448.0
    if ue8m0:
        d.format = mxjit.ScaleFormat.e8m0
    s = mxjit.scale(mxjit.amax(mxjit.blocks(v, rank - 1, group_size)), mxjit.e4m3, d)
    L = mxjit.layout
    if ue8m0:
        lay = L.mn_major_tma_packed()
    elif column_major and tma_aligned:
        lay = L.mn_major_tma()
    elif column_major:
        lay = L.permuted([rank - 1] + list(range(rank - 1)))
    else:
        lay = L.linear()
    outs = [mxjit.output("q", mxjit.cast(mxjit.e4m3, v / s)), mxjit.output("s", s, lay)]
    return mxjit.pipeline(outs, mask=mxjit.mask(rank - 2, 0, "masked_m")) if masked else mxjit.pipeline(outs)


def sglang_per_token_group_quant_fp8(
    x: torch.Tensor,
    group_size: int,
    eps: float = 1e-10,
    column_major_scales: bool = False,
    scale_tma_aligned: bool = False,
    scale_ue8m0: bool = False,
    fuse_silu_and_mul: bool = False,
    masked_m: Optional[torch.Tensor] = None,
    enable_v2: Optional[bool] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """(x_q, x_s): float8_e4m3fn codes of ``x`` (its last axis halved by ``fuse_silu_and_mul``) and their
    scales as SGLang lays them out (module docstring)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{_OP}: x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _DTYPES:
        raise TypeError(f"{_OP}: x has dtype {x.dtype}; SGLang's cast takes bfloat16, float16 or float32")
    if x.dim() < 2:
        raise ValueError(f"{_OP}: x must have rank >= 2 (tokens x hidden), got shape {tuple(x.shape)}")
    if eps != 1e-10:
        raise ValueError(f"{_OP}: eps={eps}; SGLang's kernels require eps == 1e-10")
    if not isinstance(group_size, int) or group_size < 1 or group_size & (group_size - 1):
        raise ValueError(f"{_OP}: group_size={group_size!r} must be a power of two")
    if scale_ue8m0 and not (column_major_scales and scale_tma_aligned):
        raise ValueError(f"{_OP}: scale_ue8m0 needs column_major_scales=True and scale_tma_aligned=True (SGLang's "
                         "packed UE8M0 layout)")
    k = x.shape[-1] // 2 if fuse_silu_and_mul else x.shape[-1]
    if fuse_silu_and_mul and x.shape[-1] % 2:
        raise ValueError(f"{_OP}: fuse_silu_and_mul halves the last axis, whose extent {x.shape[-1]} is odd")
    if k % group_size:
        raise ValueError(f"{_OP}: the last axis ({k}) is not a multiple of group_size={group_size}")
    if masked_m is not None:
        if x.dim() != 3:
            raise ValueError(f"{_OP}: masked_m takes x of shape (E, T, K), got {tuple(x.shape)}")
        if not isinstance(masked_m, torch.Tensor) or masked_m.dtype != torch.int32 or masked_m.dim() != 1:
            raise TypeError(f"{_OP}: masked_m must be a 1-D torch.int32 tensor (one row count per expert)")
        if masked_m.shape[0] != x.shape[0]:
            raise ValueError(f"{_OP}: masked_m has {masked_m.shape[0]} counts for {x.shape[0]} experts")
        if masked_m.device != x.device:
            raise ValueError(f"{_OP}: masked_m is on {masked_m.device} but x is on {x.device}")
    v2 = bool(fuse_silu_and_mul or masked_m is not None) if enable_v2 is None else bool(enable_v2)
    p = _pipeline(x.dtype, x.dim(), group_size, bool(column_major_scales), bool(scale_tma_aligned), bool(scale_ue8m0),
                  bool(fuse_silu_and_mul), v2, masked_m is not None)
    inputs = [x[..., :k], x[..., k:]] if fuse_silu_and_mul else [x]
    if masked_m is not None:
        inputs.append(masked_m)
    x_q, x_s = _run(p, *inputs)
    mn = x.shape[-2]
    if column_major_scales and scale_tma_aligned:
        x_s = x_s[..., :mn, :]  # the TMA-aligned storage's real rows
    return x_q, x_s
