"""mxjit.torch.compat.sglang: SGLang's sglang_per_token_group_quant_fp8 signature, output shapes, strides
and dtypes (shared/research/blockwise_fp8_peers.md §3.1's allocation table, written out here), and its
bytes against an independent numpy float32 implementation of the v1 kernel's op sequence
(test_scale_defs.sglang) and of v2's (the same, clamped to +-448 before the cast), with masked_m, packed
UE8M0 scales (an Inf group's elements saturate with their signs flipped, as SGLang's fast_pow2(-128)) and
the fused SiLU-and-mul, on CPU tensors and, where there is one, the GPU. As in test_scale_defs, every FP8
NaN code counts as one value (a NaN's sign from FP32 arithmetic is the host's)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mxjit.torch.compat.sglang import sglang_per_token_group_quant_fp8 as quant  # noqa: E402
from test_scale_defs import F, encode, fmaxf, fminf, nan_codes_as_one, sglang  # noqa: E402


def devices():
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def sample(shape, seed, specials=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * torch.exp2(torch.randint(-8, 8, shape, generator=g).float())
    if specials:
        flat = x.view(-1)
        flat[::997] = float("nan")
        flat[5::1009] = float("inf")
        flat[7::1013] = 0.0
        x.view(-1, 128)[3] = 0.0  # an all-zero group
    return x.to(torch.bfloat16)


def numpy_groups(x, g, ue8m0, v2):
    """Scales (float32 or E8M0 bytes) and codes of x's last-axis groups of g: test_scale_defs.sglang (v1),
    or v2's clamp before the cast."""
    rows = x.float().numpy().reshape(-1, g).astype(F)
    inv, codes = sglang(rows, "e4m3", ue8m0)
    if v2:
        a = fmaxf(np.where(np.isnan(np.abs(rows)), F(0), np.abs(rows)).max(axis=1), F(1e-10))
        if ue8m0:
            b = inv.view(np.uint32).astype(np.int64)
            scale = ((-(((b >> 23) & 0xFF) - 127) + 127) << 23).astype(np.uint32).view(F)
        else:
            scale = (F(448) / a).astype(F)
        codes = encode(fminf(fmaxf((rows * scale[:, None]).astype(F), F(-448)), F(448)), "e4m3")
    if ue8m0:
        inv = (inv.view(np.uint32) >> 23).astype(np.uint8)
    return inv, codes.reshape(x.shape)


def codes(q):
    return nan_codes_as_one(q.cpu().view(torch.uint8).numpy(), "e4m3")


def unpack_scales(x_s, mn, G, ue8m0):
    """(*batch, mn, G) scales from x_s: float32 as is, E8M0 bytes from the packed words."""
    if not ue8m0:
        return x_s.float().cpu().numpy()
    words = x_s.cpu().contiguous().numpy().view(np.uint8).reshape(*x_s.shape[:-1], -1)
    return words[..., :G]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("flags", ["default", "column_major", "tma", "ue8m0"])
def test_layouts_as_sglang_allocates_them(device, flags):
    cm, tma, ue = flags != "default", flags in ("tma", "ue8m0"), flags == "ue8m0"
    for shape in [(37, 640), (3, 37, 640)]:
        x = sample(shape, 1).to(device)
        q, s = quant(x, 128, column_major_scales=cm, scale_tma_aligned=tma, scale_ue8m0=ue)
        mn, G = shape[-2], 5
        A = (mn + 3) // 4 * 4
        assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape and q.is_contiguous()
        if flags == "default":
            assert s.dtype == torch.float32 and s.shape == (*shape[:-1], G) and s.is_contiguous()
        elif flags == "column_major":
            assert s.shape == (*shape[:-1], G) and s.stride()[-2:] == (1, (shape[0] * mn if len(shape) == 3 else mn))
        elif flags == "tma":
            assert s.dtype == torch.float32 and s.shape == (*shape[:-1], G) and s.stride()[-2:] == (1, A)
        else:
            assert s.dtype == torch.int32 and s.shape == (*shape[:-1], 2) and s.stride()[-2:] == (1, A)
        want_s, want_q = numpy_groups(x.cpu(), 128, ue, False)
        got = unpack_scales(s, mn, G, ue).reshape(-1)
        if ue:
            assert (got == want_s).all()
        else:
            assert (got.view(np.uint32) == want_s.view(np.uint32)).all()
        assert (codes(q) == nan_codes_as_one(want_q, "e4m3")).all()


@pytest.mark.parametrize("device", devices())
def test_masked_m_and_v2_clamp(device):
    E, T, K = 4, 45, 512
    x = sample((E, T, K), 2).to(device)
    m = torch.tensor([T, 0, 17, 1], dtype=torch.int32, device=device)
    for ue in (False, True):
        q, s = quant(x, 128, column_major_scales=True, scale_tma_aligned=True, scale_ue8m0=ue, masked_m=m)
        want_s, want_q = numpy_groups(x.cpu(), 128, ue, True)
        want_s = want_s.reshape(E, T, -1)
        got_s = unpack_scales(s, T, 4, ue)
        qb, want_q = codes(q), nan_codes_as_one(want_q, "e4m3")
        for e in range(E):
            n = int(m[e])
            assert (qb[e, :n] == want_q[e, :n]).all()
            if ue:
                assert (got_s[e, :n] == want_s[e, :n]).all()
            else:
                assert (got_s[e, :n].view(np.uint32) == want_s[e, :n].view(np.uint32)).all()
    # v2's clamp shows on NaN elements: -448 (0xFE) where v1 writes 0x7F.
    q1, _ = quant(x, 128)
    q2, _ = quant(x, 128, enable_v2=True)
    nan = torch.isnan(x.float()).cpu()
    assert (q1.cpu().view(torch.uint8)[nan] == 0x7F).all() and (q2.cpu().view(torch.uint8)[nan] == 0xFE).all()


@pytest.mark.parametrize("device", devices())
def test_fused_silu_and_mul_halves_the_last_axis(device):
    x = sample((33, 2 * 256), 3, specials=False).to(device)
    q, s = quant(x, 128, fuse_silu_and_mul=True)
    assert q.shape == (33, 256) and s.shape == (33, 2)
    gate, up = x[:, :256].float().cpu(), x[:, 256:].float().cpu()
    v = ((gate * torch.sigmoid(gate)).bfloat16().float() * up).bfloat16()
    want_s, want_q = numpy_groups(v, 128, False, True)
    # torch's sigmoid and mxjit's SiLU may round an intermediate apart by an ulp: nearly every code agrees.
    agree = (q.cpu().view(torch.uint8).numpy() == want_q).mean()
    assert agree > 0.999, agree


def test_refusals_name_the_argument():
    x = sample((8, 256), 4)
    with pytest.raises(ValueError, match="eps"):
        quant(x, 128, eps=1e-6)
    with pytest.raises(ValueError, match="scale_ue8m0 needs"):
        quant(x, 128, scale_ue8m0=True)
    with pytest.raises(ValueError, match="power of two"):
        quant(x, 96)
    with pytest.raises(ValueError, match="not a multiple of group_size"):
        quant(x, 512)
    with pytest.raises(ValueError, match="masked_m takes x of shape"):
        quant(x, 128, masked_m=torch.zeros(8, dtype=torch.int32))
    with pytest.raises(TypeError, match="int32"):
        quant(x.view(2, 4, 256), 128, masked_m=torch.zeros(2, dtype=torch.int64))
    with pytest.raises(ValueError, match="2 counts for 3 experts"):
        quant(sample((3, 4, 256), 5), 128, masked_m=torch.zeros(2, dtype=torch.int32))
