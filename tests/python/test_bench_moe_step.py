"""The CPU-runnable parts of bench/python/moe_step.py (issue 35): argument parsing, the token groups, and
the FP8-rowwise autograd function on mxjit's casts against the same function on torchao's torch-reference
casts (bit for bit) and against bf16 grouped GEMMs in float (within FP8's error). torch._scaled_grouped_mm
is CUDA-only: here it is emulated by dequantized float matmuls per group (in this test only)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "python"))

import benchutil as bu  # noqa: E402
import moe_step  # noqa: E402


def test_moe_step_parse_args():
    a = moe_step.parse_args([])
    assert (a.M, a.K, a.N, a.E, a.modes) == (16640, 5120, 8192, 16, ["bf16", "torchao", "mxjit"])
    for bad in (["--K", "5000"], ["--M", "100"], ["--modes", "fp4"], ["--E", "0"], ["--E", "1"]):
        with pytest.raises(SystemExit):
            moe_step.parse_args(bad)


def test_moe_step_group_ends_uniform_and_jagged():
    a = moe_step.parse_args(["--M", "256", "--E", "4", "--uniform"])
    assert moe_step.group_ends(a) == [64, 128, 192, 256]
    j = moe_step.group_ends(moe_step.parse_args(["--M", "256", "--E", "4"]))
    assert j[-1] == 256 and j[1] == j[0]


def _emulated_scaled_grouped_mm(a, b, sa, sb, offs, out_dtype=torch.bfloat16, use_fast_accum=False):
    """torch._scaled_grouped_mm's math on the CPU (dequantize, float matmul per group): 2-D x 3-D with
    row groups of a, and 2-D x 2-D with groups along the contraction (out (G, N, K))."""
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    af, bf = a.float(), b.float()
    if b.dim() == 3:
        out = torch.zeros(a.shape[0], b.shape[-1])
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[s:e] = (af[s:e] * sa[s:e, None]) @ (bf[g] * sb[g][None, :])
    else:
        n, k = a.shape[0], b.shape[1]
        out = torch.zeros(len(ends), n, k)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[g] = (af[:, s:e] * sa[g * n:(g + 1) * n, None]) @ (bf[s:e] * sb[g * k:(g + 1) * k][None, :])
    return out.to(out_dtype)


def test_moe_step_autograd_function_on_mxjit_casts(monkeypatch):
    monkeypatch.setattr(torch, "_scaled_grouped_mm", _emulated_scaled_grouped_mm, raising=False)
    a = moe_step.parse_args(["--M", "128", "--K", "64", "--N", "96", "--E", "4", "--seed", "1"])
    x, b_t, offs, grad_out = moe_step.make_layer(a, "cpu")
    assert b_t.stride() == (64 * 96, 1, 64) and offs.tolist()[1] == offs.tolist()[0]
    runs = {}
    for mode in ("mxjit", "reference"):
        out = moe_step.run_step(moe_step.layer_fn(mode), x, b_t, offs, grad_out)
        runs[mode] = [out.detach().clone(), x.grad.clone(), b_t.grad.clone()]
    assert bu.byte_diff(runs["mxjit"], runs["reference"]).equal  # the casts are the only difference
    # against bf16 grouped GEMMs in float: FP8 (e4m3, power-of-two row scales) within a few percent
    xf, bf, gf = x.detach().float(), b_t.detach().float(), grad_out.float()
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    want_out = torch.zeros(a.M, a.N)
    want_gx = torch.zeros(a.M, a.K)
    want_gb = torch.zeros(a.E, a.K, a.N)
    for g, (s, e) in enumerate(zip(starts, ends)):
        want_out[s:e] = xf[s:e] @ bf[g]
        want_gx[s:e] = gf[s:e] @ bf[g].t()
        want_gb[g] = xf[s:e].t() @ gf[s:e]
    for got, want in zip(runs["mxjit"], (want_out, want_gx, want_gb)):
        assert got.shape == want.shape
        rel = ((got.float() - want).norm() / want.norm()).item()
        assert rel < 0.08, rel


def test_mxfp8_casts_of_a_step_agree_with_torchao_references_on_cpu():
    import peers  # noqa: PLC0415

    a = moe_step.parse_args(["--M", "256", "--K", "128", "--N", "256", "--E", "4", "--mxfp8-casts"])
    said = []
    rows = moe_step.mxfp8_casts(a, "cpu", said.append)
    assert len({r.op for r in rows}) == 6, said
    compared = [r for r in rows if r.agree]
    assert {r.op for r in compared} == {r.op for r in rows}  # every cast has a torchao path that ran on CPU
    assert all(r.agree == "yes" for r in compared), "\n".join(said)
    assert any("skip: dim0 to_mx (compiled) + triton_mx_block_rearrange_2d_M_groups" in s for s in said)
    assert peers.HEADERS[0] == "op"


def test_compare_steps_on_cpu(monkeypatch):
    monkeypatch.setattr(torch, "_scaled_grouped_mm", _emulated_scaled_grouped_mm, raising=False)
    a = moe_step.parse_args(["--M", "128", "--K", "64", "--N", "96", "--E", "4", "--seed", "2"])
    x, b_t, offs, grad_out = moe_step.make_layer(a, "cpu")
    rows = moe_step.compare_steps(x, b_t, offs, grad_out, ["bf16", "mxjit"])
    by_mode = {r[0]: r for r in rows}
    assert by_mode["mxjit"][1] == "yes" and float(by_mode["mxjit"][2]) == 0.0
    assert "bytes differ (bf16 has no FP8 rounding)" in by_mode["bf16"][1]
    assert 0.0 < float(by_mode["bf16"][2]) < 0.08


def test_moe_step_profile_counts_casts_not_gemms():
    # Names as torch.profiler showed them on an H100 (torch 2.11): the grouped GEMM's CUTLASS kernel
    # mentions a swizzle in its template arguments and was once counted as a cast.
    gemm = ("_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalINS1_17GroupProblemShapeIN4cute5tupleIJiiiEEEEE"
            "NS1_10CollectiveMmaINS_4gemm19MainloopSm90ArrayTmaGmmaWarpSpecializedILi4ENS1_17ThreadblockSwizzleE")
    assert not moe_step.is_cast(gemm)
    for cast in ("mxjit_jagged_groups_e4m3_fp32_bf16_cfeb0f45", "_triton_fp8_colwise_3d_scale_and_cast_kernel",
                 "_triton_fp8_rowwise_3d_transpose_scales_rhs_kernel", "_triton_fp8_per_group_colwise_scales_dual_kernel"):
        assert moe_step.is_cast(cast), cast
    assert not moe_step.is_cast("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>")
