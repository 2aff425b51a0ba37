"""mxjit.torch.compat.torchao against torchao 0.18 on CPU: bit-exact with to_mx (every scaling mode and
element format) and with torchao's torch references (dim1, 3-D, to_blocked, M/K groups, per-expert,
per-group FP8), output shapes / strides / dtypes as torchao's contracts, and patch_torchao().

Special values (zeros, subnormals, +-Inf, NaN, max values, FP4 ties, a huge value among tiny ones) are
bit-exact too, except where the module docstring of compat/torchao.py says they differ: blocks with NaN
or Inf (their scales agree) and the sign of FP8 NaN codes. The tests check exactly that.
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

from torchao.prototype.moe_training.kernels.mxfp8 import quant as ao_quant  # noqa: E402
from torchao.prototype.moe_training import utils as ao_moe_utils  # noqa: E402
from torchao.prototype.mx_formats import mx_tensor as ao_mx  # noqa: E402
from torchao.prototype.mx_formats.config import ScaleCalculationMode as Mode  # noqa: E402
from torchao.prototype.mx_formats.utils import to_blocked  # noqa: E402

import mxjit.torch.compat.torchao as mxao  # noqa: E402

from cases import rand  # noqa: E402

ELEMS = [torch.float8_e4m3fn, torch.float8_e5m2, "fp6_e2m3", "fp6_e3m2", torch.float4_e2m1fn_x2]
MODES = [Mode.FLOOR, Mode.RCEIL, Mode.CEIL, Mode.EVEN]


def u8(t):
    return t.view(torch.uint8)


def specials(shape, dtype, seed):
    """Blocks of 32 that each hold one kind of special value among random ones."""
    x = rand(shape, torch.float32, seed=seed)
    flat = x.view(-1)
    kinds = [0.0, 2.0 ** -133, float("inf"), float("-inf"), float("nan"), 448.0, 57344.0, 6.0, 7.5, 28.0, 0.75,
             2.0 ** 100, -0.0]
    for b in range(flat.numel() // 32):
        k = kinds[b % len(kinds)]
        if b % len(kinds) == 0:
            flat[b * 32:(b + 1) * 32] = 0.0  # a zero block
        elif b % len(kinds) == 1:
            flat[b * 32:(b + 1) * 32] = k * torch.arange(32)  # subnormals only
        elif b % len(kinds) == 11:
            flat[b * 32:(b + 1) * 32] = 2.0 ** -20
            flat[b * 32 + 7] = k  # one huge among tiny
        else:
            flat[b * 32 + (b % 32)] = k
    return x.to(dtype)


def nonfinite_blocks(x, block, axis=-1):
    """Mask over blocks (along the last axis of x moved to `axis`) holding NaN or Inf."""
    xt = x.float().movedim(axis, -1)
    bad = ~torch.isfinite(xt)
    return bad.reshape(*bad.shape[:-1], bad.shape[-1] // block, block).any(-1)


def inf_only_blocks(x, block, axis=-1):
    """Mask over blocks holding +-Inf and no NaN."""
    xt = x.float().movedim(axis, -1)
    shape = (*xt.shape[:-1], xt.shape[-1] // block, block)
    return xt.isinf().reshape(shape).any(-1) & ~xt.isnan().reshape(shape).any(-1)


def assert_scales_and_data(got_s, got_d, want_s, want_d, x, block, elem, axis=-1):
    """Bit-exact, except (documented in compat/torchao.py) the scales of blocks holding Inf but no NaN,
    the codes of blocks holding NaN or Inf or only subnormal-range values, and the sign of FP8 NaN codes."""
    assert got_s.dtype == want_s.dtype and got_s.shape == want_s.shape
    inf_only = inf_only_blocks(x, block, axis)
    assert bool(((u8(got_s) == u8(want_s)) | inf_only).all())
    assert bool((u8(got_s)[inf_only] == 0xFF).all())  # nan_block: Inf blocks get the NaN scale
    assert got_d.shape == want_d.shape and got_d.dtype == want_d.dtype and got_d.stride() == want_d.stride()
    gd, wd = u8(got_d), u8(want_d)
    if elem in (torch.float8_e4m3fn, torch.float8_e5m2):
        nan_codes = (0x7F, 0xFF) if elem == torch.float8_e4m3fn else (0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF)
        is_nan = lambda t: torch.isin(t, torch.tensor(nan_codes, dtype=torch.uint8))  # noqa: E731
        same = (gd == wd) | (is_nan(gd) & is_nan(wd))
    else:
        same = gd == wd
    bad = nonfinite_blocks(x, block, axis)
    # Blocks of subnormal-range values (scale byte 0 but not all zero): torchao scales their elements by
    # 2^-126 (FLOOR/CEIL/EVEN: its F32_MIN_NORMAL clamp) or 1 (RCEIL), not by the byte's 2^-127.
    xt = x.float().movedim(axis, -1)
    nonzero = (xt.reshape(*xt.shape[:-1], xt.shape[-1] // block, block) != 0).any(-1)
    bad = bad | ((u8(got_s).reshape(nonzero.shape) == 0) & nonzero)
    if elem == torch.float4_e2m1fn_x2:  # codes packed two per byte: a byte belongs to its block
        bad = bad.repeat_interleave(block // 2, -1)
    else:
        bad = bad.repeat_interleave(block, -1)
    bad = bad.movedim(-1, axis) if axis != -1 else bad
    assert bool((same | bad).all()), f"{int((~(same | bad)).sum())} codes differ outside NaN/Inf blocks"


@pytest.mark.parametrize("elem", ELEMS, ids=str)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_to_mx_bit_exact(elem, mode, dtype):
    for seed, shape in [(1, (64, 128)), (2, (3, 8, 96))]:
        x = rand(shape, dtype, seed=seed)
        s, d = mxao.to_mx(x, elem, 32, mode)
        ws, wd = ao_mx.to_mx(x, elem, 32, mode)
        assert torch.equal(u8(s), u8(ws)) and s.dtype == ws.dtype and s.shape == ws.shape
        assert torch.equal(u8(d), u8(wd)) and d.dtype == wd.dtype and d.shape == wd.shape
        x = specials((64, 256), dtype, seed)
        s, d = mxao.to_mx(x, elem, 32, mode)
        ws, wd = ao_mx.to_mx(x, elem, 32, mode)
        assert_scales_and_data(s, d, ws, wd, x, 32, elem)


@pytest.mark.parametrize("elem", [torch.float8_e4m3fn, torch.float4_e2m1fn_x2], ids=str)
@pytest.mark.parametrize("shape", [(128, 128), (200, 96), (2, 128, 64)])
def test_to_mx_swizzled_scales(elem, shape):
    x = rand(shape, seed=3)
    s, d = mxao.to_mx(x, elem, 32, Mode.RCEIL, is_swizzled_scales=True)
    ws, wd = ao_mx.to_mx(x, elem, 32, Mode.RCEIL, is_swizzled_scales=True)
    assert s.shape == ws.shape and s.dtype == ws.dtype and torch.equal(u8(s), u8(ws))
    assert torch.equal(u8(d), u8(wd))


def dim1_reference(x, block=32, mode=Mode.RCEIL):
    # torchao's triton_to_mxfp8_dim1_reference (kernels.py), which needs triton to import there.
    s, d = ao_mx.to_mx(x.t().contiguous(), torch.float8_e4m3fn, block, scaling_mode=mode)
    return d.t(), s.view(torch.float8_e8m0fnu)


@pytest.mark.parametrize("mode", [Mode.FLOOR, Mode.RCEIL], ids=lambda m: m.value)
def test_dim0_dim1_and_mxfp8_quantize_contracts(mode):
    x = rand((256, 128), seed=4)
    d, s = mxao.triton_to_mxfp8_dim1(x, 32, mode.value)
    wd, ws = dim1_reference(x, 32, mode)
    assert d.shape == (256, 128) and d.stride() == (1, 256) and d.dtype == torch.float8_e4m3fn
    assert s.shape == (128, 8) and s.stride() == (8, 1) and s.dtype == torch.float8_e8m0fnu
    assert torch.equal(u8(d), u8(wd)) and torch.equal(u8(s), u8(ws))
    d0, s0 = mxao.triton_to_mxfp8_dim0(x, 32, mode.value)
    ws0, wd0 = ao_mx.to_mx(x, torch.float8_e4m3fn, 32, mode)
    assert torch.equal(u8(d0), u8(wd0)) and torch.equal(u8(s0), u8(ws0)) and s0.dtype == torch.float8_e8m0fnu
    r, c, rs, cs = mxao.mxfp8_quantize_cuda(x, rowwise=True, colwise=True, scaling_mode=mode.value)
    # torchao's fake (kernels.py _fake_mxfp8_quantize): row scales (rows, K/32, 1), col scales (K, M/32) strides (1, K).
    assert rs.shape == (256, 4, 1) and cs.shape == (128, 8) and cs.stride() == (1, 128)
    assert c.stride() == (1, 256) and r.stride() == (128, 1)
    assert torch.equal(u8(r), u8(wd0)) and torch.equal(u8(rs).view(256, 4), u8(ws0))
    assert torch.equal(u8(c), u8(wd)) and torch.equal(u8(cs), u8(ws))
    r, c, rs, cs = mxao.mxfp8_quantize_cuda(x, scaling_mode=mode.value)
    assert r.shape == (0,) and rs.shape == (0,) and torch.equal(u8(c), u8(wd))
    x = specials((256, 128), torch.bfloat16, 9)
    d, s = mxao.triton_to_mxfp8_dim1(x, 32, mode.value)
    wd, ws = dim1_reference(x, 32, mode)
    assert_scales_and_data(s, d.t(), ws, wd.t(), x.t(), 32, torch.float8_e4m3fn)


@pytest.mark.parametrize("dim2", [1, 32])
@pytest.mark.parametrize("blocked", [False, True])
@pytest.mark.parametrize("mode", ["floor", "rceil"])
def test_3d_expert_weights(dim2, blocked, mode):
    for x in [rand((3, 64, 96), seed=5), rand((2, 160, 64), seed=6).transpose(-2, -1).contiguous().transpose(-2, -1)]:
        d, s = mxao.mxfp8_quantize_cuda_3d(x, 32, 32, dim2, mode, blocked_scale_output=blocked)
        wd, ws = ao_quant._mxfp8_quantize_reference_3d(x, block_size=32, scale_block_dim1=32, scale_block_dim2=dim2,
                                                       scaling_mode=mode, blocked_scale_output=dim2 == 1 and blocked)
        if dim2 == 32:
            # torchao's reference keeps to_mx's trailing 1 ((E, N/32, K/32, 1), its fake says (E, N/32, K/32)) and
            # so fails to block them; the layout it means: each scale repeated over its 32 rows of K, per expert.
            ws = ws.squeeze(-1)
            if blocked:
                ws = ao_quant.torch_to_blocked_per_group_3d(ws.transpose(-2, -1).repeat_interleave(32, dim=1))
        e, n, k = x.shape
        assert d.shape == (e, n, k) and d.stride() == (n * k, 1, n)
        assert s.shape == ws.shape and s.dtype == torch.float8_e8m0fnu
        assert torch.equal(u8(d), u8(wd.contiguous().transpose(-2, -1).contiguous().transpose(-2, -1)))
        assert torch.equal(u8(s), u8(ws))


@pytest.mark.parametrize("shape", [(128, 4), (200, 7), (33, 130), (1, 1)])
def test_block_rearrange_equals_to_blocked(shape):
    s = torch.randint(0, 255, shape, dtype=torch.uint8)
    got = mxao.triton_mx_block_rearrange(s.view(torch.float8_e8m0fnu))
    want = to_blocked(s.view(torch.float8_e8m0fnu))
    assert got.dtype == torch.float8_e8m0fnu
    assert got.shape == (-(-shape[0] // 128) * 128, -(-shape[1] // 4) * 4)
    assert torch.equal(u8(got).flatten(), u8(want))
    nc = torch.randint(0, 255, (shape[1], shape[0]), dtype=torch.uint8).t()  # any input strides
    assert torch.equal(u8(mxao.triton_mx_block_rearrange(nc)).flatten(), to_blocked(nc.contiguous()))


def test_per_group_3d_rearrange():
    s = torch.randint(0, 255, (4, 160, 9), dtype=torch.uint8).view(torch.float8_e8m0fnu)
    got = mxao.triton_mx_block_rearrange_per_group_3d(s)
    want = ao_quant.torch_to_blocked_per_group_3d(s)
    assert got.shape == want.shape == (4, 256 * 12) and torch.equal(u8(got), u8(want))


@pytest.mark.parametrize("sizes", [[128, 0, 257, 31], [5], [0, 0, 300], [1, 1, 1, 1, 1]])
def test_m_and_k_group_rearranges(sizes):
    ends = torch.tensor(sizes, dtype=torch.int32).cumsum(0).to(torch.int32)
    r = int(ends[-1]) + 3  # rows past the last group belong to none
    s = torch.randint(1, 255, (r, 8), dtype=torch.uint8).view(torch.float8_e8m0fnu)
    got = mxao.triton_mx_block_rearrange_2d_M_groups(s, ends)
    want, _ = ao_quant.torch_to_blocked_2d_M_groups(s[: int(ends[-1])], ends)
    assert got.shape == (r + 128 * len(sizes), 8)
    assert torch.equal(u8(got)[: want.shape[0]], u8(want)) and not u8(got)[want.shape[0]:].any()
    assert torch.equal(u8(mxao.mx_block_rearrange_2d_M_groups_cuda(s, ends)), u8(got))
    # K groups: groups of scale columns.
    sk = torch.randint(1, 255, (200, int(ends[-1])), dtype=torch.uint8).view(torch.float8_e8m0fnu)
    got = mxao.triton_mx_block_rearrange_2d_K_groups(sk, ends)
    want, _ = ao_quant.torch_to_blocked_2d_K_groups(sk, ends)
    assert got.shape == want.shape and torch.equal(u8(got), u8(want))


@pytest.mark.parametrize("sizes", [[256, 0, 128, 64], [448]])
def test_grouped_casts_write_the_m_and_k_group_layouts(sizes):
    ends = torch.tensor(sizes, dtype=torch.int32).cumsum(0).to(torch.int32)
    m = int(ends[-1])
    x = rand((m, 128), seed=7)  # torchao's M-groups reference needs a multiple of 4 scale columns
    import mxjit.torch as mxt

    q, sg = mxt.quantize_grouped(x, ends, "e4m3", 32, 1, "rceil")
    ws, wd = ao_mx.to_mx(x, torch.float8_e4m3fn, 32, Mode.RCEIL)
    want, _ = ao_quant.torch_to_blocked_2d_M_groups(ws, ends)
    assert torch.equal(u8(q), u8(wd))
    assert torch.equal(u8(sg)[: want.shape[0]], u8(want)) and not u8(sg)[want.shape[0]:].any()
    q, sg = mxt.quantize_grouped(x, ends, "e4m3", 32, 0, "rceil")  # dim1: groups of scale columns (K groups)
    wd, ws = dim1_reference(x, 32, Mode.RCEIL)
    want, _ = ao_quant.torch_to_blocked_2d_K_groups(ws, ends // 32)
    assert torch.equal(u8(q), u8(wd))
    rp, kp = want.shape
    assert torch.equal(u8(sg).flatten()[: rp * kp].view(rp, kp), u8(want))


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("special", [False, True])
def test_per_group_fp8(pow2, dtype, special):
    sizes = [10, 1, 57, 33, 28]  # torchao's torch references fail on an empty group (amax of nothing)
    ends = torch.tensor(sizes, dtype=torch.int32).cumsum(0).to(torch.int32)
    k = int(ends[-1])
    x = rand((k, 48), seed=8, special=special)
    d, s = mxao.triton_fp8_per_group_colwise_scales(x, ends, dtype, pow2)
    wd, ws = ao_moe_utils.torch_to_float8_per_group_colwise(x, ends, dtype, pow2)
    assert d.shape == (k, 48) and d.stride() == (1, k) and d.dtype == dtype
    assert s.shape == (48 * len(sizes),) and s.dtype == torch.float32
    _assert_fp8_and_scales(d, s, wd, ws, dtype)
    xr = x.t().contiguous()
    d, s = mxao.triton_fp8_per_group_rowwise_scales(xr, ends, dtype, pow2)
    wd, ws = ao_moe_utils.torch_to_float8_per_group_rowwise(xr, ends, dtype, pow2)
    assert d.shape == (48, k) and d.stride() == (k, 1) and s.shape == (48 * len(sizes),)
    _assert_fp8_and_scales(d, s, wd, ws, dtype)
    a, sa, b, sb = mxao.triton_fp8_per_group_colwise_scales_dual(x, x * 2, ends, dtype, pow2)
    assert torch.equal(u8(a), u8(mxao.triton_fp8_per_group_colwise_scales(x, ends, dtype, pow2)[0]))
    assert torch.equal(sb.view(torch.int32), mxao.triton_fp8_per_group_colwise_scales(x * 2, ends, dtype, pow2)[1]
                       .view(torch.int32))


def _assert_fp8_and_scales(d, s, wd, ws, dtype):
    assert torch.equal(s.view(torch.int32)[~s.isnan()], ws.view(torch.int32)[~ws.isnan()])
    assert torch.equal(s.isnan(), ws.isnan())
    gd, wdd = u8(d.contiguous()), u8(wd.contiguous())
    nan = (0x7F, 0xFF) if dtype == torch.float8_e4m3fn else (0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF)
    codes = torch.tensor(nan, dtype=torch.uint8)
    assert bool(((gd == wdd) | (torch.isin(gd, codes) & torch.isin(wdd, codes))).all())


def test_patch_torchao_rebinds_and_runs_torchao_code_on_mxjit():
    from torchao.prototype.mx_formats import kernels as ao_kernels
    from torchao.prototype.mx_formats import utils as ao_utils
    from torchao.prototype.mx_formats.config import MXFP8Dim1CastKernelChoice
    from torchao.quantization.quantize_.common import KernelPreference

    x = rand((128, 64), seed=10)
    with pytest.raises(Exception):  # torchao's own Triton kernel needs triton and an sm_100 GPU
        ao_utils._to_mxfp8_dim1_kernel_wrapper(x, 32, torch.float8_e4m3fn, torch.bfloat16, KernelPreference.AUTO,
                                               MXFP8Dim1CastKernelChoice.TRITON, Mode.RCEIL)
    original = ao_mx.to_mx
    with mxao.patch_torchao() as patch:
        assert ao_mx.to_mx is mxao.to_mx and ao_kernels.triton_to_mxfp8_dim1 is mxao.triton_to_mxfp8_dim1
        assert ao_utils.triton_to_mxfp8_dim1 is mxao.triton_to_mxfp8_dim1
        assert ao_quant.mxfp8_quantize_cuda_3d is mxao.mxfp8_quantize_cuda_3d
        assert len(patch.replaced) >= 10
        t = ao_utils._to_mxfp8_dim1_kernel_wrapper(x, 32, torch.float8_e4m3fn, torch.bfloat16, KernelPreference.AUTO,
                                                   MXFP8Dim1CastKernelChoice.TRITON, Mode.RCEIL)
        wd, ws = dim1_reference(x)
        assert torch.equal(u8(t.qdata.t()), u8(wd)) and torch.equal(u8(t.scale), u8(ws))
        # An MXTensor made the emulated way goes through the patched to_mx.
        m = ao_mx.MXTensor.to_mx(x, torch.float8_e4m3fn, 32)
        assert torch.equal(m.dequantize(torch.float32), original(x, torch.float8_e4m3fn, 32)[1].float() *
                           ao_mx.get_fp_scale(original(x, torch.float8_e4m3fn, 32)[0]).repeat_interleave(32, -1))
    assert ao_mx.to_mx is original and ao_utils.triton_to_mxfp8_dim1 is not mxao.triton_to_mxfp8_dim1


def test_per_group_fp8_empty_group_gets_the_scale_of_a_zero_group():
    # torchao's Triton kernels read an empty group as amax 0: r = max / 1e-12 (rounded: 2^48 for E4M3).
    ends = torch.tensor([16, 16, 40], dtype=torch.int32)
    x = rand((40, 8), seed=12)
    for pow2, want in [(False, 448.0 / 1e-12), (True, 2.0 ** 48)]:
        d, s = mxao.triton_fp8_per_group_colwise_scales(x, ends, torch.float8_e4m3fn, pow2)
        assert torch.equal(s.view(3, 8)[1], torch.full((8,), want, dtype=torch.float32))

