"""Op calls shared by the torch tests: every mxjit op with arguments that exercise it (tails,
non-contiguous inputs, every layout), and input makers with random and adversarial values."""

from __future__ import annotations

import torch

import mxjit as mx
import mxjit.torch as mxt

ops = torch.ops.mxjit


def rand(shape, dtype=torch.bfloat16, device="cpu", seed=0, special=False, scale=4.0):
    """Random values over many binades; `special` mixes in zeros, subnormals, +-Inf, NaN, max values, ties."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float32) * torch.exp2(torch.randint(-8, 9, shape, generator=g)) * scale
    if special and x.numel():
        flat = x.view(-1)
        pick = torch.randint(0, 100, flat.shape, generator=g)
        flat[pick < 4] = 0.0
        flat[(pick >= 4) & (pick < 6)] = -0.0
        flat[(pick >= 6) & (pick < 8)] = 2.0 ** -133
        flat[pick == 8] = float("inf")
        flat[pick == 9] = float("-inf")
        flat[pick == 10] = float("nan")
        flat[(pick >= 11) & (pick < 13)] = 448.0
        flat[(pick >= 13) & (pick < 15)] = -57344.0
        flat[(pick >= 15) & (pick < 18)] = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])[
            torch.randint(0, 7, (int(((pick >= 15) & (pick < 18)).sum()),), generator=g)]
    return x.to(dtype).to(device)


def offsets(sizes, device="cpu"):
    return torch.tensor(sizes, dtype=torch.int32).cumsum(0).to(torch.int32).to(device)


def to_device(args, device):
    """The args with every tensor (also in lists) copied to `device`, strides kept."""
    def move(a):
        if isinstance(a, torch.Tensor):
            out = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=device)
            return out.copy_(a) if a.numel() else out
        if isinstance(a, list):
            return [move(t) for t in a]
        return a
    return tuple(move(a) for a in args)


def op_cases(device="cpu", special=False):
    """(name, op overload, args) for every op; several shapes each. Values are made on the CPU and
    copied to `device` (strides kept), so the cases of two devices hold the same bytes."""
    c = _cases_cpu(special)
    return [(n, op, to_device(args, device)) for n, op, args in c] if device != "cpu" else c


def _cases_cpu(special):
    device = "cpu"
    c = []
    s = 0

    def r(shape, dtype=torch.bfloat16):
        nonlocal s
        s += 1
        return rand(shape, dtype, device, seed=s, special=special)

    for shape in [(64, 128), (33, 70), (3, 5, 96)]:
        c.append(("quantize", ops.quantize.default, (r(shape), "e4m3", 32, -1, "rceil", "row_major", "linear",
                                                     "nan_block", False)))
    c.append(("quantize_fp4_blocked", ops.quantize.default, (r((130, 64)), "e2m1", 32, -1, "floor", "row_major",
                                                             "blocked", "nan_block", False)))
    c.append(("quantize_fp6_axis0_col", ops.quantize.default, (r((96, 40), torch.float32), "e2m3", 32, 0, "even",
                                                               "col_major", "blocked", "satfinite", False)))
    c.append(("quantize_int8_noncontig", ops.quantize.default, (r((80, 64)).t(), "int8", 16, 1, "ceil", "row_major",
                                                                "linear", "nan_block", False)))
    c.append(("quantize_fp4x2", ops.quantize.default, (r((32, 64), torch.float16), "e2m1", 32, -1, "rceil",
                                                       "row_major", "linear", "nan_block", True)))
    for shape in [(64, 128), (2, 7, 64), (40, 100)]:
        c.append(("to_mxfp8_dim0", ops.to_mxfp8_dim0.default, (r(shape), 32, "rceil")))
    for shape, layout in [((128, 64), "linear"), ((70, 33), "linear"), ((160, 96), "blocked")]:
        c.append(("to_mxfp8_dim1", ops.to_mxfp8_dim1.default, (r(shape), 32, "floor", layout)))
    c.append(("to_mxfp8_dim1_noncontig", ops.to_mxfp8_dim1.default, (r((96, 64)).t(), 32, "rceil", "linear")))
    for rw, cw, layout in [(True, True, "linear"), (True, False, "linear"), (False, True, "blocked"),
                           (True, True, "blocked"), (False, False, "linear")]:
        c.append(("mxfp8_quantize", ops.mxfp8_quantize.default, (r((64, 96)), rw, cw, "rceil", 32, layout)))
    for d2, blocked in [(1, True), (1, False), (32, False), (32, True)]:
        c.append(("mxfp8_quantize_3d", ops.mxfp8_quantize_3d.default, (r((2, 64, 96)), 32, 32, d2, "rceil", blocked)))
    c.append(("mxfp8_quantize_3d_t", ops.mxfp8_quantize_3d.default,
              (r((2, 96, 64)).transpose(-2, -1), 32, 32, 1, "floor", True)))
    for axis in (1, 0):
        c.append(("quantize_grouped", ops.quantize_grouped.default,
                  (r((160, 64)), offsets([32, 0, 96, 32], device), "e4m3", 32, axis, "rceil")))
    for colwise in (True, False):
        op = ops.fp8_per_group_colwise_scales.default if colwise else ops.fp8_per_group_rowwise_scales.default
        for pow2 in (False, True):
            c.append(("fp8_per_group", op, (r((100, 48)) if colwise else r((48, 100)), offsets([10, 0, 57, 33], device),
                                            torch.float8_e4m3fn, pow2)))
        c.append(("fp8_per_group_e5m2", op, (r((64, 40), torch.float32).t().contiguous().t(),
                                             offsets([40] if not colwise else [64], device), torch.float8_e5m2, True)))
    for conv, layout in [("torchao", "linear"), ("te", "blocked")]:
        c.append(("nvfp4_quantize", ops.nvfp4_quantize.default, (r((48, 64)), conv, layout, False)))
    d, sc = mxt.quantize(rand((32, 64), device=device, seed=99), "e4m3", 32)
    c.append(("dequantize", ops.dequantize.default, (d, sc, "e4m3", 32, -1, torch.float32)))
    d4, sc4 = mxt.quantize(rand((32, 64), device=device, seed=98), "e2m1", 32)
    c.append(("dequantize_fp4", ops.dequantize.default, (d4, sc4, "e2m1", 32, -1, torch.bfloat16)))
    c.append(("mx_block_rearrange", ops.mx_block_rearrange.default, (sc.view(torch.uint8)[:, :2].t(),)))
    c.append(("mx_block_rearrange_3d", ops.mx_block_rearrange.default, (torch.randint(0, 255, (2, 33, 5), dtype=torch.uint8,
                                                                                       generator=torch.Generator().manual_seed(7)).to(device),)))
    p = mx.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4 ; mxfp4.e2m1 blocks(1,32)")
    c.append(("run_text", ops.run.default, (p.to_text(), [r((64, 64))], False)))
    x = mx.input("x", mx.bf16, 2)
    v = mx.silu(x) * 2.0
    sv = mx.e8m0_scale(mx.amax(mx.blocks(v, 1, 32)), mx.e4m3, mx.ScaleRule.rceil)
    pv = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / sv)), mx.output("s", sv), mx.output("amax", mx.amax(v))])
    c.append(("run_registered", ops.run.default, (mxt.register_pipeline(pv), [r((32, 96))], False)))
    return c
