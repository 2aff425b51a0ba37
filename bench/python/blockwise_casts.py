"""torchao's blockwise FP8 training casts (``torchao.prototype.blockwise_fp8_training.kernels``, 0.18) as
mxjit pipelines with the same bytes in the same layouts, beside torchao's Triton kernels and its torch
references. peers.py times them (op group ``blockwise``); tests/python/test_bench_blockwise.py checks the bytes.

Every cast is torchao's recipe ``mx.recipes.torchao_blockwise``: q = fp32(448 / fp64(max(amax, 1e-12))),
codes clamp(x * q, -448, 448) in E4M3, stored scale div_rn(1, q). A torchao op and mxjit's pipeline for it:

    op (x (M, K) row-major)        blocks     codes                           scales (FP32)
    act_quant_lhs                  1x128      (M, K) row-major                (M, K/128) strides (1, M)
    act_quant_rhs                  128x1      (M, K) strides (1, M)           (M/128, K) row-major
    act_quant_transposed_lhs       128x1      (K, M) row-major = x^T          (K, M/128) strides (1, K)
    weight_quant_rhs               128x128    (M, K) strides (1, M)           (M/128, K/128) strides (1, M/128)
    weight_quant_transposed_rhs    128x128    (K, M) strides (1, K) = x^T     (K/128, M/128) strides (1, K/128)

act_quant_rhs and act_quant_transposed_lhs write the same memory (one is the other's transposed view), and
so do weight_quant_transposed_rhs and a row-major cast of x: mxjit runs one pipeline for each pair and
returns the view torchao returns.
"""

from __future__ import annotations

from typing import Callable, Dict, NamedTuple

import torch

E4M3 = torch.float8_e4m3fn
BLOCK = 128
OPS = ("act_quant_lhs", "act_quant_rhs", "act_quant_transposed_lhs", "weight_quant_rhs",
       "weight_quant_transposed_rhs")

_PIPELINES: dict = {}


def pipeline(blocks: str, q_layout: str, s_layout: str):
    """torchao's blockwise cast of a bf16 matrix as an mxjit pipeline: `blocks` "1x128" (along K), "128x1"
    (along M) or "128x128"; codes and scales "row_major" or "col_major" (cached per signature)."""
    import mxjit as mx  # noqa: PLC0415

    key = (blocks, q_layout, s_layout)
    if key not in _PIPELINES:
        lay = {"row_major": mx.layout.row_major, "col_major": mx.layout.col_major}
        x = mx.input("x", mx.bf16, 2)
        b = {"1x128": lambda: mx.blocks(x, 1, BLOCK), "128x1": lambda: mx.blocks(x, 0, BLOCK),
             "128x128": lambda: mx.blocks(x, (0, 1), (BLOCK, BLOCK))}[blocks]()
        s = mx.scale(mx.amax(b), mx.e4m3, mx.recipes.torchao_blockwise(mx.e4m3))
        _PIPELINES[key] = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x / s), lay[q_layout]()),
                                       mx.output("s", s, lay[s_layout]())])
    return _PIPELINES[key]


# op -> (blocks, codes layout, scales layout, whether torchao returns the transposed views)
PLANS: Dict[str, tuple] = {
    "act_quant_lhs": ("1x128", "row_major", "col_major", False),
    "act_quant_rhs": ("128x1", "col_major", "row_major", False),
    "act_quant_transposed_lhs": ("128x1", "col_major", "row_major", True),
    "weight_quant_rhs": ("128x128", "col_major", "col_major", False),
    "weight_quant_transposed_rhs": ("128x128", "row_major", "row_major", True),
}


def mxjit_op(op: str) -> Callable:
    """mxjit's version of torchao's ``triton_fp8_blockwise_<op>``: x -> (codes E4M3, scales FP32) with
    torchao's shapes and strides."""
    import mxjit.torch as mxt  # noqa: PLC0415

    blocks, ql, sl, transposed = PLANS[op]
    p = pipeline(blocks, ql, sl)

    def run(x: torch.Tensor):
        q, s = mxt.run(p, x)
        q = q if q.dtype == E4M3 else q.view(E4M3)
        return (q.t(), s.t()) if transposed else (q, s)

    return run


def torchao_op(op: str) -> Callable:
    """torchao's Triton kernel ``triton_fp8_blockwise_<op>`` (x, 128, e4m3)."""
    from torchao.prototype.blockwise_fp8_training import kernels as k  # noqa: PLC0415

    fn = getattr(k, f"triton_fp8_blockwise_{op}")
    return lambda x: fn(x, BLOCK, E4M3)


class Reference(NamedTuple):
    fn: Callable
    name: str
    loops: bool  # loops over columns on the host (one small op per column: too slow to time at real shapes)


def torch_reference(op: str) -> Reference:
    """torchao's torch reference of `op` (logical bytes equal to the Triton kernel's; layouts may differ):
    torch_blockwise_scale_act_quant_lhs / _act_quant_rhs / _weight_quant, transposed where the op is."""
    from torchao.prototype.blockwise_fp8_training import kernels as k  # noqa: PLC0415

    def t(r):
        return r[0].t(), r[1].t()

    return {
        "act_quant_lhs": Reference(lambda x: k.torch_blockwise_scale_act_quant_lhs(x, BLOCK, E4M3),
                                   "torch_blockwise_scale_act_quant_lhs", False),
        "act_quant_rhs": Reference(lambda x: k.torch_blockwise_scale_act_quant_rhs(x, BLOCK, E4M3),
                                   "torch_blockwise_scale_act_quant_rhs", True),
        "act_quant_transposed_lhs": Reference(lambda x: t(k.torch_blockwise_scale_act_quant_rhs(x, BLOCK, E4M3)),
                                              "torch_blockwise_scale_act_quant_rhs, transposed", True),
        "weight_quant_rhs": Reference(lambda x: k.torch_blockwise_scale_weight_quant(x, BLOCK, E4M3),
                                      "torch_blockwise_scale_weight_quant", False),
        "weight_quant_transposed_rhs": Reference(lambda x: t(k.torch_blockwise_scale_weight_quant(x, BLOCK, E4M3)),
                                                 "torch_blockwise_scale_weight_quant, transposed", False),
    }[op]


def triton_layout(op: str, m: int, k: int) -> tuple:
    """((codes shape, strides), (scales shape, strides)) of torchao 0.18's Triton kernel for x (m, k)."""
    mb, kb = m // BLOCK, k // BLOCK
    return {
        "act_quant_lhs": (((m, k), (k, 1)), ((m, kb), (1, m))),
        "act_quant_rhs": (((m, k), (1, m)), ((mb, k), (k, 1))),
        "act_quant_transposed_lhs": (((k, m), (m, 1)), ((k, mb), (1, k))),
        "weight_quant_rhs": (((m, k), (1, m)), ((mb, kb), (1, mb))),
        "weight_quant_transposed_rhs": (((k, m), (1, k)), ((kb, mb), (1, kb))),
    }[op]
