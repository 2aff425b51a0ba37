"""Argument checks shared by the spec functions (so the fake and the real kernels refuse the same
inputs). Every message names the op, the argument and the rule broken."""

from __future__ import annotations

import torch

from ._dtypes import BYTE_DTYPES, VALUE_DTYPE_NAMES, VALUE_DTYPES


def tensor(op: str, name: str, t) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in ("cuda", "cpu", "meta"):
        raise ValueError(f"{op}: {name} is on {t.device}; mxjit runs on CUDA and CPU tensors")
    return t


def values(op: str, name: str, t, ranks=None) -> torch.Tensor:
    """A tensor the cast reads: bf16/f16/f32, of one of `ranks` (any strides)."""
    tensor(op, name, t)
    if t.dtype not in VALUE_DTYPES:
        raise TypeError(f"{op}: {name} has dtype {t.dtype}; expected {VALUE_DTYPE_NAMES}")
    if ranks is not None and t.dim() not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{op}: {name} must be {want}, got a {t.dim()}-D tensor of shape {tuple(t.shape)}")
    return t


def offsets(op: str, name: str, t, x: torch.Tensor) -> torch.Tensor:
    """Group ends: a 1-D int32 tensor on x's device."""
    tensor(op, name, t)
    if t.dtype != torch.int32:
        raise TypeError(f"{op}: {name} has dtype {t.dtype}; group ends are torch.int32")
    if t.dim() != 1:
        raise ValueError(f"{op}: {name} must be 1-D (one end per group), got shape {tuple(t.shape)}")
    if t.device != x.device:
        raise ValueError(f"{op}: {name} is on {t.device} but the input is on {x.device}; both must be on one device")
    return t


def byte_tensor(op: str, name: str, t, ranks=None) -> torch.Tensor:
    """MX codes or scale bytes: a one-byte dtype."""
    tensor(op, name, t)
    if t.dtype not in BYTE_DTYPES:
        raise TypeError(f"{op}: {name} has dtype {t.dtype}; expected a one-byte dtype (uint8, float8_e8m0fnu, "
                        "float8_e4m3fn, float8_e5m2, int8)")
    if ranks is not None and t.dim() not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{op}: {name} must be {want}, got a {t.dim()}-D tensor of shape {tuple(t.shape)}")
    return t


def same_device(op: str, name: str, t: torch.Tensor, x: torch.Tensor, xname: str = "the input") -> None:
    if t.device != x.device:
        raise ValueError(f"{op}: {name} is on {t.device} but {xname} is on {x.device}; both must be on one device")


def choice(op: str, name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{op}: {name}={value!r} is not one of {', '.join(repr(a) for a in allowed)}")


def positive_pow2(op: str, name: str, value: int) -> None:
    if not isinstance(value, int) or value <= 0 or value & (value - 1):
        raise ValueError(f"{op}: {name}={value!r} must be a power of two")


def axis(op: str, name: str, value: int, rank: int) -> int:
    if not -rank <= value < rank:
        raise ValueError(f"{op}: {name}={value} is out of range for a {rank}-D input")
    return value % rank
