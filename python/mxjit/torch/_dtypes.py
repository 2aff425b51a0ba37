"""torch dtypes <-> mxjit's storage types and element formats."""

from __future__ import annotations

import torch

import mxjit

# Inputs the casts read (values), by torch dtype.
VALUE_DTYPES = {torch.bfloat16: mxjit.bf16, torch.float16: mxjit.f16, torch.float32: mxjit.f32}
VALUE_DTYPE_NAMES = "torch.bfloat16, torch.float16 or torch.float32"
# One-byte torch dtypes that hold MX codes or E8M0/E4M3 scale bytes (mxjit's u8).
BYTE_DTYPES = (torch.uint8, torch.int8, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu)

# Element formats by the names the ops take.
ELEMS = {
    "e4m3": mxjit.e4m3, "e5m2": mxjit.e5m2, "e2m3": mxjit.e2m3, "e3m2": mxjit.e3m2, "e2m1": mxjit.e2m1,
    "int8": mxjit.int8,
}
ELEM_NAMES = "e4m3, e5m2, e2m3, e3m2, e2m1, int8"

RULES = {"floor": mxjit.ScaleRule.floor, "rceil": mxjit.ScaleRule.rceil, "ceil": mxjit.ScaleRule.ceil,
         "even": mxjit.ScaleRule.even}
POLICIES = {"nan_block": mxjit.NanPolicy.nan_block, "satfinite": mxjit.NanPolicy.satfinite}


def value_torch_dtype(dtype) -> torch.dtype:
    """torch dtype of a plain-values output (bf16 / f16 / f32)."""
    return {mxjit.bf16: torch.bfloat16, mxjit.f16: torch.float16, mxjit.f32: torch.float32}[dtype]


def output_torch_dtype(info: dict, fp4x2: bool = False) -> torch.dtype:
    """The torch dtype an output is returned as (an entry of Pipeline.output_info()).

    Codes: FP8 as ``float8_e4m3fn`` / ``float8_e5m2``, MXINT8 as ``int8``, FP6 and FP4 (packed) as
    ``uint8`` (FP4 as ``float4_e2m1fn_x2`` with ``fp4x2``); scales: E8M0 as ``float8_e8m0fnu``, E4M3
    (NVFP4) as ``float8_e4m3fn``, FP32 as ``float32``, BF16 as ``bfloat16``, packed four to a word as ``int32``; tensor amax ``float32``; values as declared.
    """
    kind = info["kind"]
    if kind == "amax":
        return torch.float32
    if kind == "values":
        return value_torch_dtype(info["dtype"])
    if kind == "scales" and info["pack"] > 1:
        return torch.int32  # a layout packing four byte scales into each 32-bit word (mn_major_tma_packed)
    if kind == "scales":
        return {"e8m0": torch.float8_e8m0fnu, "e4m3": torch.float8_e4m3fn, "f32": torch.float32,
                "bf16": torch.bfloat16}[info["scale_format"]]
    elem = info["elem"]
    if elem == "e4m3":
        return torch.float8_e4m3fn
    if elem == "e5m2":
        return torch.float8_e5m2
    if elem == "int8":
        return torch.int8
    if elem == "e2m1" and fp4x2:
        return torch.float4_e2m1fn_x2
    return torch.uint8


def elem_from_torch(elem) -> str:
    """An element-format name from a torch dtype or torchao's names (str); ValueError otherwise."""
    if isinstance(elem, str):
        name = {"fp6_e2m3": "e2m3", "fp6_e3m2": "e3m2", "fp4_e2m1": "e2m1"}.get(elem, elem)
        if name in ELEMS:
            return name
    table = {torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2", torch.float4_e2m1fn_x2: "e2m1"}
    if elem in table:
        return table[elem]
    raise ValueError(f"elem_dtype {elem!r}: not an MX element format (torch.float8_e4m3fn, torch.float8_e5m2, "
                     f"torch.float4_e2m1fn_x2, 'fp6_e2m3', 'fp6_e3m2' or one of {ELEM_NAMES})")
