"""torchao's cast entry points with their exact signatures, argument order, defaults, output shapes,
strides and dtypes (torchao 0.18), running on mxjit; and ``patch_torchao()``, which swaps them into
torchao's modules so an existing torchao training loop runs on mxjit with one line::

    import mxjit.torch.compat.torchao as mxao
    mxao.patch_torchao()          # before building the model / the first step

torchao itself is not needed to import this module (``to_mx`` takes its ScaleCalculationMode or the
strings "floor", "rceil", "ceil", "even").

Where the results differ from torchao's (tests/python/test_torchao_compat.py checks every one):
* Blocks holding NaN or Inf: mxjit's ``nan_block`` policy gives the block scale 0xFF and NaN codes
  for every element. torchao's eager ``to_mx`` gives NaN blocks 0xFF too (scales agree) but divides
  their elements by +Inf (+-0, NaN stays NaN); blocks with Inf and no NaN get the exponent of Inf minus
  emax under FLOOR/CEIL/EVEN (0xF7 for E4M3) and 0xFE under RCEIL, with elements scaled by it.
* Blocks of subnormal-range values only (scale byte 0, e.g. every |x| < 2^-119 for E4M3 FLOOR): mxjit
  scales their elements by 2^127 as the byte says; torchao's to_mx uses 2^126 (FLOOR/CEIL/EVEN: it clamps
  the scale to the smallest normal, "it would be more correct to set the minimum to 2**-127") or 1 (RCEIL).
* FP8 NaN codes: mxjit writes 0x7F (sign dropped, docs/numerics.md); torch's cast keeps the sign.
* ``round_scales_to_power_of_2`` with float32 inputs: mxjit rounds r down exactly (exponent bits);
  torchao's ``exp2(floor(log2(r)))`` in FP32 rounds r within 1 ulp below 2^k up to 2^k (its log2
  rounds to k). Unreachable from bf16/f16 inputs.
* Group ends that are not multiples of the block size (M/K-group casts): refused (a block would
  straddle two groups); torchao's Triton kernels read past the group there.

Where torchao's own torch references fail, these follow its kernels' contracts (and the tests say so):
``_mxfp8_quantize_reference_3d`` with 32x32 blocks keeps to_mx's trailing 1 in the scales and cannot
block them (here: (E, N/32, K/32), blocked with each scale repeated over its 32 rows of K, as its fake
and CuTeDSL kernel); ``torch_to_float8_per_group_*`` fail on an empty group (here: amax 0, as its
Triton kernels); ``torch_to_blocked_2d_M_groups`` needs a multiple of 4 scale columns.
"""

from __future__ import annotations

import sys
from typing import Literal, Optional, Tuple

import torch

from .. import _ops  # noqa: F401  (registers the ops)
from .. import _geometry as geo

_mx = torch.ops.mxjit
Tensor = torch.Tensor


def _mode(scaling_mode) -> str:
    """'floor' | 'rceil' | 'ceil' | 'even' from torchao's ScaleCalculationMode or a string."""
    value = getattr(scaling_mode, "value", scaling_mode)
    if not isinstance(value, str):
        raise ValueError(f"scaling_mode={scaling_mode!r}: expected a ScaleCalculationMode or a string")
    return value.lower()


def _elem(elem_dtype) -> str:
    from .._dtypes import elem_from_torch  # noqa: PLC0415

    return elem_from_torch(elem_dtype)


# ---- mx_formats ----

def to_mx(data_hp: Tensor, elem_dtype, block_size: int, scaling_mode="floor", is_swizzled_scales: bool = False):
    """torchao.prototype.mx_formats.mx_tensor.to_mx: returns (scale, data) -- scale first.

    scale ``float8_e8m0fnu`` (*lead, K/bs), or swizzled (*lead, ceil(M/128)*32, ceil(K/128)*16); data
    e4m3/e5m2 as x, FP6 unpacked ``uint8``, FP4 packed ``uint8`` (..., K/2).
    """
    if data_hp.dtype not in (torch.bfloat16, torch.float32):
        raise TypeError(f"to_mx: data_hp has dtype {data_hp.dtype}; torchao's to_mx takes bfloat16 or float32")
    if data_hp.shape[-1] % block_size:
        raise ValueError(f"to_mx: the last dimension of shape {tuple(data_hp.shape)} must be divisible by block_size "
                         f"{block_size}")
    elem = _elem(elem_dtype)
    mode = _mode(scaling_mode)
    if not is_swizzled_scales:
        data, scale = _mx.quantize.default(data_hp, elem, block_size, -1, mode, "row_major", "linear", "nan_block",
                                           False)
        return scale, data
    lead, m, k = tuple(data_hp.shape[:-2]), data_hp.shape[-2], data_hp.shape[-1]
    # torchao blocks the scales of all leading rows as one (L*M, K/bs) matrix.
    flat = data_hp.reshape(-1, k)
    data, scale = _mx.quantize.default(flat, elem, block_size, -1, mode, "row_major", "blocked", "nan_block", False)
    data = data.view(*data_hp.shape[:-1], data.shape[-1])
    scale_m, scale_k = geo.cdiv(m, 128) * 32, geo.cdiv(k, 128) * 16
    return scale.view(*lead, scale_m, scale_k), data


def triton_to_mxfp8_dim0(x: Tensor, inner_block_size: int = 32, scaling_mode: str = "rceil") -> Tuple[Tensor, Tensor]:
    """torchao.prototype.mx_formats.kernels.triton_to_mxfp8_dim0: (data e4m3 as x, scale e8m0 (*lead, K/bs))."""
    return _mx.to_mxfp8_dim0.default(x, inner_block_size, _mode(scaling_mode))


def triton_to_mxfp8_dim1(x: Tensor, inner_block_size: int = 32, scaling_mode: str = "rceil") -> Tuple[Tensor, Tensor]:
    """torchao.prototype.mx_formats.kernels.triton_to_mxfp8_dim1: (data (M, K) strides (1, M), scale (K, M/bs))."""
    return _mx.to_mxfp8_dim1.default(x, inner_block_size, _mode(scaling_mode), "linear")


def triton_to_mxfp8_dim1_reference(x_hp: Tensor, block_size: int = 32, scaling_mode="rceil") -> Tuple[Tensor, Tensor]:
    """torchao's reference of dim1 (same outputs as triton_to_mxfp8_dim1; no transpose copy here)."""
    return _mx.to_mxfp8_dim1.default(x_hp, block_size, _mode(scaling_mode), "linear")


def mxfp8_quantize_cuda(x: Tensor, rowwise: bool = False, colwise: bool = True,
                        scaling_mode: str = "rceil") -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """torchao.prototype.mx_formats.kernels.mxfp8_quantize_cuda: (out_row, out_col, scale_row, scale_col);
    both casts from one read when both are asked for; a disabled side returns empty (0,) tensors."""
    return _mx.mxfp8_quantize.default(x, rowwise, colwise, _mode(scaling_mode), 32, "linear")


def triton_mx_block_rearrange(scale_tensor: Tensor) -> Tensor:
    """torchao's triton_mx_block_rearrange: (pad128(R), pad4(C)) in 128x4 blocks, same dtype, any input strides."""
    if scale_tensor.dim() != 2:
        raise ValueError(f"triton_mx_block_rearrange: scale_tensor must be 2-D, got shape {tuple(scale_tensor.shape)}")
    return _mx.mx_block_rearrange.default(scale_tensor)


# ---- moe_training ----

def mxfp8_quantize_cuda_3d(x: Tensor, block_size: int = 32, scale_block_dim1: Literal[32] = 32,
                           scale_block_dim2: Literal[1, 32] = 1, scaling_mode: str = "rceil", stage_count: int = 2,
                           blocked_scale_output: bool = True) -> Tuple[Tensor, Tensor]:
    """torchao's mxfp8_quantize_cuda_3d on any GPU (and the CPU): data (E, N, K) strides (N*K, 1, N);
    scales blocked (E, pad128(K)*pad4(N/32)) or plain (E, N/32, K) / (E, N/32, K/32). `stage_count` is
    torchao's kernel tuning knob and has no effect here."""
    del stage_count
    return _mx.mxfp8_quantize_3d.default(x, block_size, scale_block_dim1, scale_block_dim2, _mode(scaling_mode),
                                         blocked_scale_output)


def triton_mx_block_rearrange_per_group_3d(scale_tensor: Tensor) -> Tensor:
    """torchao's per-expert rearrange: (E, R, C) scales -> (E, pad128(R)*pad4(C))."""
    if scale_tensor.dim() != 3:
        raise ValueError(f"triton_mx_block_rearrange_per_group_3d: scale_tensor must be 3-D, got shape "
                         f"{tuple(scale_tensor.shape)}")
    e = scale_tensor.shape[0]
    return _mx.mx_block_rearrange.default(scale_tensor).view(e, -1)


def _group_ranges(offsets: Tensor):
    """Starts and sizes of the groups cut by int32 ends (on the device, no host sync)."""
    ends = offsets.to(torch.int64)
    starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    return starts, ends - starts


def triton_mx_block_rearrange_2d_M_groups(scales_tensor: Tensor, input_offsets: Tensor) -> Tensor:
    """torchao's M-groups rearrange: (R, C) scales, int32 group ends in rows -> (R + G*128, pad4(C)) with each
    group a 128x4-blocked tensor starting at a 128-row boundary, zero-filled. torch index arithmetic on the
    device (no host sync); mxjit.torch.quantize_grouped writes this layout from the cast directly."""
    r, c = scales_tensor.shape
    g = input_offsets.shape[0]
    cp = geo.round_up(c, 4)
    out = scales_tensor.new_zeros((r + g * 128, cp))
    if r == 0 or g == 0 or c == 0:
        return out
    starts, sizes = _group_ranges(input_offsets)
    padded_starts = torch.cumsum(geo.cdiv(sizes, 128) * 128, 0) - geo.cdiv(sizes, 128) * 128
    rows = torch.arange(r, device=scales_tensor.device)
    grp = torch.searchsorted(input_offsets.to(torch.int64), rows, right=True)  # group of each row
    keep = grp < g
    grp_c = grp.clamp(max=g - 1)
    p = padded_starts[grp_c] + rows - starts[grp_c]  # padded row
    cols = torch.arange(c, device=scales_tensor.device)
    off = (((p // 128) * (cp // 4))[:, None] + (cols // 4)[None, :]) * 512 + ((p % 32) * 16 + ((p % 128) // 32) * 4)[
        :, None] + (cols % 4)[None, :]
    flat = out.view(-1)
    src = scales_tensor[keep]
    flat.view(torch.uint8)[off[keep].reshape(-1)] = src.reshape(-1).view(torch.uint8)
    return out


def triton_mx_block_rearrange_2d_K_groups(scales_tensor: Tensor, input_offsets: Tensor) -> Tensor:
    """torchao's K-groups rearrange: (R, C) scales, int32 group ends in scale columns -> (pad128(R), C + G*4) whose
    flat storage holds each group as a 128x4-blocked (pad128(R), pad4(n_g)) tensor at column offset Q_g*pad128(R)."""
    r, c = scales_tensor.shape
    g = input_offsets.shape[0]
    rp = geo.round_up(r, 128)
    out = scales_tensor.new_zeros((rp, c + g * 4))
    if r == 0 or g == 0 or c == 0:
        return out
    starts, sizes = _group_ranges(input_offsets)
    cg = geo.cdiv(sizes, 4) * 4
    q = torch.cumsum(cg, 0) - cg  # first padded column of each group
    cols = torch.arange(c, device=scales_tensor.device)
    grp = torch.searchsorted(input_offsets.to(torch.int64), cols, right=True)
    keep = grp < g
    grp_c = grp.clamp(max=g - 1)
    kk = cols - starts[grp_c]
    rows = torch.arange(r, device=scales_tensor.device)
    off = (q[grp_c] * rp)[None, :] + (((rows // 128)[:, None] * (cg[grp_c] // 4)[None, :] + (kk // 4)[None, :]) * 512) + (
        (rows % 32) * 16 + ((rows % 128) // 32) * 4)[:, None] + (kk % 4)[None, :]
    flat = out.view(-1)
    flat.view(torch.uint8)[off[:, keep].reshape(-1)] = scales_tensor[:, keep].reshape(-1).view(torch.uint8)
    return out


def mx_block_rearrange_2d_M_groups_cuda(scales_tensor: Tensor, input_offsets: Tensor, chunks_per_tb: int = 4) -> Tensor:
    """torchao's CUDA M-groups rearrange (same layout as the Triton one; `chunks_per_tb` has no effect here)."""
    if chunks_per_tb not in (1, 4, 8, 16):
        raise ValueError(f"mx_block_rearrange_2d_M_groups_cuda: chunks_per_tb={chunks_per_tb} must be 1, 4, 8 or 16")
    return triton_mx_block_rearrange_2d_M_groups(scales_tensor, input_offsets)


def triton_fp8_per_group_colwise_scales(hp_tensor: Tensor, offsets: Tensor,
                                        output_dtype: torch.dtype = torch.float8_e4m3fn,
                                        round_scales_to_power_of_2: bool = False) -> Tuple[Tensor, Tensor]:
    """torchao's jagged colwise FP8: data (K, N) strides (1, K), scales fp32 (N*G,) group-major."""
    return _mx.fp8_per_group_colwise_scales.default(hp_tensor, offsets, output_dtype, round_scales_to_power_of_2)


def triton_fp8_per_group_rowwise_scales(hp_tensor: Tensor, offsets: Tensor,
                                        output_dtype: torch.dtype = torch.float8_e4m3fn,
                                        round_scales_to_power_of_2: bool = False) -> Tuple[Tensor, Tensor]:
    """torchao's jagged rowwise FP8: offsets are column ends; data (M, K) row-major, scales fp32 (M*G,)."""
    return _mx.fp8_per_group_rowwise_scales.default(hp_tensor, offsets, output_dtype, round_scales_to_power_of_2)


def triton_fp8_per_group_colwise_scales_dual(hp_tensor_1: Tensor, hp_tensor_2: Tensor, offsets: Tensor,
                                             output_dtype: torch.dtype = torch.float8_e4m3fn,
                                             round_scales_to_power_of_2: bool = False):
    """torchao's dual colwise FP8: both tensors cast as triton_fp8_per_group_colwise_scales (4 outputs)."""
    a, sa = triton_fp8_per_group_colwise_scales(hp_tensor_1, offsets, output_dtype, round_scales_to_power_of_2)
    b, sb = triton_fp8_per_group_colwise_scales(hp_tensor_2, offsets, output_dtype, round_scales_to_power_of_2)
    return a, sa, b, sb


# ---- patch_torchao ----

# (defining module, name) of every entry point patch_torchao swaps in.
_TARGETS = [
    ("torchao.prototype.mx_formats.mx_tensor", "to_mx"),
    ("torchao.prototype.mx_formats.kernels", "triton_to_mxfp8_dim0"),
    ("torchao.prototype.mx_formats.kernels", "triton_to_mxfp8_dim1"),
    ("torchao.prototype.mx_formats.kernels", "triton_to_mxfp8_dim1_reference"),
    ("torchao.prototype.mx_formats.kernels", "mxfp8_quantize_cuda"),
    ("torchao.prototype.mx_formats.kernels", "triton_mx_block_rearrange"),
    ("torchao.prototype.moe_training.kernels.mxfp8.quant", "mxfp8_quantize_cuda_3d"),
    ("torchao.prototype.moe_training.kernels.mxfp8.quant", "triton_mx_block_rearrange_2d_M_groups"),
    ("torchao.prototype.moe_training.kernels.mxfp8.quant", "triton_mx_block_rearrange_2d_K_groups"),
    ("torchao.prototype.moe_training.kernels.mxfp8.quant", "triton_mx_block_rearrange_per_group_3d"),
    ("torchao.prototype.moe_training.kernels.mxfp8.quant", "mx_block_rearrange_2d_M_groups_cuda"),
    ("torchao.prototype.moe_training.kernels.jagged_float8_scales", "triton_fp8_per_group_colwise_scales"),
    ("torchao.prototype.moe_training.kernels.jagged_float8_scales", "triton_fp8_per_group_rowwise_scales"),
    ("torchao.prototype.moe_training.kernels.jagged_float8_scales", "triton_fp8_per_group_colwise_scales_dual"),
]
# Modules that import those names at module level (`from ... import name`); imported first so the
# patch reaches them. Any other loaded torchao module holding an original is patched as well.
_IMPORTERS = [
    "torchao.prototype.mx_formats.utils",
    "torchao.prototype.moe_training.kernels",
    "torchao.prototype.moe_training.kernels.mxfp8",
    "torchao.prototype.moe_training.mxfp8_grouped_mm",
    "torchao.prototype.moe_training.fp8_grouped_mm",
    "torchao.prototype.moe_training.utils",
]


class Patch:
    """What patch_torchao() replaced: (module, name, original) triples; ``undo()`` restores them."""

    def __init__(self, replaced):
        self.replaced = replaced

    def undo(self) -> None:
        for module, name, original in reversed(self.replaced):
            setattr(module, name, original)
        self.replaced = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.undo()


def patch_torchao() -> Patch:
    """Rebinds torchao's cast entry points (``_TARGETS``) to this module's in every loaded torchao module that
    holds them, so torchao's MX / MoE training code runs its casts on mxjit. Returns a Patch (``undo()``,
    or use as a context manager). Raises ImportError without torchao."""
    import importlib  # noqa: PLC0415

    originals = {}
    for mod_name, name in _TARGETS:
        mod = importlib.import_module(mod_name)
        originals[name] = getattr(mod, name)
    for mod_name in _IMPORTERS:
        try:
            importlib.import_module(mod_name)
        except ImportError:  # an optional part of torchao that this build lacks
            pass
    this = sys.modules[__name__]
    replaced = []
    for mod_name, module in list(sys.modules.items()):
        if not mod_name.startswith("torchao") or module is None:
            continue
        for name, original in originals.items():
            if getattr(module, name, None) is original:
                replaced.append((module, name, original))
                setattr(module, name, getattr(this, name))
    return Patch(replaced)


__all__ = [name for _, name in _TARGETS] + ["patch_torchao", "Patch"]
