"""Composable layouts through the torch generic op: the op allocates each output in its storage
shape, strides and dtype (int32 words for packed UE8M0, FP32 MN-major TMA-aligned scales), and the
bytes equal the linear scales placed by the peers' index formulas (research/blockwise_fp8_peers.md
§1.2), written out here independently, padding zero."""

import pytest

import mxjit as mx

torch = pytest.importorskip("torch")
import mxjit.torch as mxt  # noqa: E402

from cases import rand  # noqa: E402

L = mx.layout


def round_up(v, m):
    return (v + m - 1) // m * m


@pytest.mark.parametrize("shape", [(50, 640), (4, 128), (1, 1000), (130, 1152)])
def test_packed_ue8m0_and_mn_major_fp32_scales_by_formula(shape):
    x = mx.input("x", mx.bf16, 2)
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3, mx.ScaleRule.ceil)
    f = mx.f32_scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3)
    p = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x / s)), mx.output("s", s),
                     mx.output("sp", s, L.mn_major_tma_packed()),
                     mx.output("q1", mx.cast(mx.e4m3, x / f)), mx.output("f", f),
                     mx.output("fm", f, L.mn_major_tma())])
    xt = rand(shape, seed=3, special=True)
    outs = torch.ops.mxjit.run(mxt.register_pipeline(p), [xt], False)
    lin, packed, flin, fmn = outs[1], outs[2], outs[4], outs[5]
    mn, sf_k = shape[0], (shape[1] + 127) // 128
    a, words = round_up(mn, 4), (sf_k + 3) // 4
    # Storage: the padded tensor of words, MN-major (rows innermost), int32 / float32.
    assert packed.dtype == torch.int32 and tuple(packed.shape) == (a, words) and packed.stride() == (1, a)
    assert fmn.dtype == torch.float32 and tuple(fmn.shape) == (a, sf_k) and fmn.stride() == (1, a)
    # Packed: byte i of word (m, w) is scale 4w+i of row m, zero past sf_k and below the padded rows.
    lb = lin.view(torch.uint8)
    got = packed.as_strided((a * words,), (1,)).view(torch.uint8).reshape(words, a, 4)
    want = torch.zeros((words, a, 4), dtype=torch.uint8)
    for m in range(mn):
        for k in range(sf_k):
            want[k // 4, m, k % 4] = lb[m, k]
    assert torch.equal(got, want)
    # FP32: (m, j) -> j*A + m, padding rows 0.0.
    flat = fmn.as_strided((a * sf_k,), (1,))
    want_f = torch.zeros(a * sf_k, dtype=torch.float32)
    for m in range(mn):
        for j in range(sf_k):
            want_f[j * a + m] = flin[m, j]
    assert torch.equal(flat.view(torch.int32), want_f.view(torch.int32))


def test_gemm_ready_2d_scales_by_formula():
    x = mx.input("x", mx.bf16, 2)
    t = mx.f32_scale(mx.amax(mx.blocks(x, (0, 1), (128, 128))), mx.e4m3)
    p = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x / t)), mx.output("s", t),
                     mx.output("r", t, L.gemm_ready_2d()), mx.output("c", t, L.gemm_ready_2d_t())])
    shape = (300, 1000)
    outs = torch.ops.mxjit.run(mxt.register_pipeline(p), [rand(shape, seed=4)], False)
    lin, r, c = outs[1], outs[2], outs[3]
    mb, kb = 3, 8
    assert tuple(r.shape) == (mb, round_up(kb, 4)) and r.stride() == (round_up(kb, 4), 1)
    assert tuple(c.shape) == (round_up(mb, 4), kb) and c.stride() == (1, round_up(mb, 4))
    assert torch.equal(r[:, :kb], lin) and torch.equal(c[:mb, :], lin)
    assert not r[:, kb:].any() and not c[mb:, :].any()  # padding is zero


def test_layout_values_mirror_cxx():
    assert L.modes([L.rest, L.cols / 4, L.rows, L.cols % 4]).align(L.rows, 4).pack(4) == L.mn_major_tma_packed()
    assert str(L.modes([L.rest, L.axis(-2), L.axis(-1)]).align(L.axis(-1), 4)) == "gemm_ready_2d"
    assert mx.Layout.parse(L.blocked_128x4().definition) == L.blocked_128x4()
    with pytest.raises(mx.UsageError, match="extent 4"):
        L.modes([L.rest, L.rows, L.cols]).pack(4)
