"""Scale definitions from Python (mx.ScaleDef, mx.recipes) and whole-axis blocks (mx.whole) on CPU tensors,
through mxjit.torch.run (the LLVM backend), against independent step-by-step numpy float32
implementations of each peer's op sequence (shared/research/blockwise_fp8_peers.md §0-§5):

* every finite bf16 value (65,280) is the amax of one whole-axis row, for every recipe;
* all-zero groups, NaN (both amax NaN policies), +-Inf, amax below the floor, amax exactly 448 * 2^k,
  subnormals, and tails (1x128 groups of a 300-wide row);
* torchao's Float8 rowwise / tensorwise / 3-D colwise scales and codes against torchao 0.18's own torch
  functions (tensor_to_scale + to_fp8_saturated, which run on CPU).

Codes are compared byte for byte, except that every FP8 NaN code counts as one value: the sign of a
NaN produced by FP32 arithmetic on a NaN is the host's, not the recipe's.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mxjit as mx  # noqa: E402
import mxjit.torch as mxt  # noqa: E402

F = np.float32
C448 = F(1.0) / F(448.0)  # RN(1/448), DeepGEMM's and SGLang's constant


# ---- independent numerics (numpy float32: one rounding per operation) ----

FMT = {"e4m3": (4, 3, 448.0), "e5m2": (5, 2, 57344.0)}


def encode(y, elem, saturate=True):
    """RNE float32 -> FP8 code. saturate: NaN -> 0x7F, +-Inf and beyond +-max -> +-max (cvt.rn.satfinite);
    else torch's .to(): beyond range E4M3 NaN, E5M2 +-Inf."""
    ebits, mbits, top = FMT[elem]
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    y = np.asarray(y, F)
    sign = np.signbit(y)
    nan, inf = np.isnan(y), np.isinf(y)
    a = np.where(nan | inf, 0.0, np.abs(y.astype(np.float64)))
    e = np.maximum(np.frexp(a)[1] - 1, emin)
    q = np.ldexp(1.0, e - mbits)
    v = np.rint(a / q) * q  # exact: a / q is a dyadic number
    over = inf | (v > top)
    v = np.where(over, 0.0, v)
    e2 = np.frexp(v)[1] - 1
    sub = (v == 0) | (e2 < emin)
    field = np.where(sub, 0, e2 + bias)
    mant = np.where(sub, v / np.ldexp(1.0, emin - mbits), v / np.ldexp(1.0, e2 - mbits) - (1 << mbits))
    code = (field.astype(np.int64) << mbits) | mant.astype(np.int64)
    top_code = 0x7E if elem == "e4m3" else 0x7B  # S.1111.110 (448), S.11110.11 (57344)
    if saturate:
        code = np.where(over, top_code, code)
    else:
        code = np.where(over, 0x7F if elem == "e4m3" else 0x7C, code)
    code = code | np.where(sign, 0x80, 0)
    return np.where(nan, 0x7F, code).astype(np.uint8)


def nan_codes_as_one(codes, elem):
    c = np.asarray(codes, np.uint8)
    isnan = (c & 0x7F) == 0x7F if elem == "e4m3" else ((c & 0x7C) == 0x7C) & ((c & 3) != 0)
    return np.where(isnan, 0x7F, c)


def bits(x):
    return np.asarray(x, F).view(np.uint32)


def from_bits(u):
    return (np.asarray(u, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(F)


def amax_rows(x, ignore_nan):
    a = np.abs(x)
    if ignore_nan:
        a = np.where(np.isnan(a), F(0), a)
    return a.max(axis=1).astype(F)  # NaN propagates through max


def fmaxf(a, b):
    return np.fmax(np.asarray(a, F), np.asarray(b, F)).astype(F)


def fminf(a, b):
    return np.fmin(np.asarray(a, F), np.asarray(b, F)).astype(F)


def deepgemm(x, elem, ue8m0):
    """per_token_cast_to_fp8 as torch runs it on the GPU: s = RN(clamp(amax, 1e-4) * RN(1/max)); ceil_to_ue8m0
    on the exponent bits; elements x * RN(1/s), then torch's non-saturating .to()."""
    top = F(FMT[elem][2])
    a = amax_rows(x, False)
    a = np.where(np.isnan(a), a, np.maximum(a, F(1e-4)))
    s = (a * (F(1) / top)).astype(F)
    if ue8m0:
        b = bits(np.abs(s)).astype(np.int64)
        ex = ((b >> 23) & 0xFF) + ((b & 0x7FFFFF) != 0)
        s = from_bits(np.clip(ex, 1, 254) << 23)
    r = (F(1) / s).astype(F)
    return s, encode((x * r[:, None]).astype(F), elem, saturate=False)


def vllm(x, elem, ue8m0, eps=1e-10):
    """per_token_group_quant_fp8: fmaxf from eps (NaN dropped), y_s = RN(amax / max); ue8m0: the exponent-bit
    ceil of fmaxf(y_s, 1e-10); elements fminf(fmaxf(RN(x / y_s), -max), max)."""
    top = F(FMT[elem][2])
    a = fmaxf(amax_rows(x, True), F(eps))
    s = (a / top).astype(F)
    if ue8m0:
        b = bits(fmaxf(np.abs(s), F(1e-10))).astype(np.int64)
        s = from_bits((((b >> 23) & 0xFF) + ((b & 0x7FFFFF) != 0)) << 23)
    y = fminf(fmaxf((x / s[:, None]).astype(F), -top), top)
    return s, encode(y, elem)


def sglang(x, elem, ue8m0):
    """per_token_group_quant_8bit v1 (precise build): amax from 1e-10 (fmaxf); scale_inv = RN(amax * RN(1/max));
    scale = RN(max / amax), or with ue8m0 e = fast_log2_ceil(scale_inv), scale = fast_pow2(-e),
    scale_inv = fast_pow2(e); elements cvt.satfinite(RN(x * scale))."""
    top = F(FMT[elem][2])
    a = fmaxf(amax_rows(x, True), F(1e-10))
    inv = (a * (F(1) / top)).astype(F)
    if ue8m0:
        b = bits(inv).astype(np.int64)
        e = ((b >> 23) & 0xFF) - 127 + ((b & 0x7FFFFF) != 0)
        scale, inv = from_bits((-e + 127) << 23), from_bits((e + 127) << 23)
    else:
        scale = (top / a).astype(F)
    return inv, encode((x * scale[:, None]).astype(F), elem)


def transformer_engine(x, elem, pow2, eps=0.0, input_max=float.fromhex("0x1.fep127")):
    """recipe_common.cuh: amax fmaxf from 0, floored at eps; scale 1 for amax 0 / Inf / NaN, else
    __fdiv_rn(max, amax) (Inf -> input_max), pow2: bits & 0xFF800000; stores 1 / scale; elements
    cvt.satfinite(RN(x * scale))."""
    top = F(FMT[elem][2])
    a = amax_rows(x, True)
    a = np.where(a < F(eps), F(eps), a)
    with np.errstate(divide="ignore"):
        q = (top / a).astype(F)
    q = np.where(np.isinf(q), F(input_max), q)
    if pow2:
        q = from_bits(bits(q) & 0xFF800000)
    q = np.where(np.isinf(a) | (a == 0) | np.isnan(a), F(1), q).astype(F)
    return (F(1) / q).astype(F), encode((x * q[:, None]).astype(F), elem)


def torchao_blockwise(x, elem):
    """blockwise_fp8_training kernels: amax clamped at 1e-12 (NaN dropped), q = fp32(max / fp64(amax)), stores
    div_rn(1, q); elements tl.clamp(x * q, -max, max) (NaN -> +max), then the cast."""
    top = FMT[elem][2]
    a = np.maximum(amax_rows(x, True), F(1e-12)).astype(np.float64)
    q = (top / a).astype(F)
    # tl.clamp as torchao's kernels compile it: min first, so a NaN product becomes +max (measured, H100).
    y = fmaxf(fminf((x * q[:, None]).astype(F), F(top)), F(-top))
    return (F(1) / q).astype(F), encode(y, elem)


def f32_multiplier(x, elem, store_multiplier=False, pow2=False):
    """The library's FP8 rowwise recipe (torchao Float8): r = RN(max / max(amax, 1e-12)) (NaN kept), pow2:
    r rounded down to a power of two exactly (r & 0xFF800000; NaN stays NaN, as torchao's
    exp2(floor(log2(r)))); stores 1 / r or r; elements RN(x * r), saturating."""
    top = F(FMT[elem][2])
    a = amax_rows(x, False)
    r = (top / np.where(np.isnan(a), a, np.maximum(a, F(1e-12)))).astype(F)
    if pow2:
        r = np.where(np.isnan(r), r, from_bits(bits(r) & 0xFF800000))
    return (r if store_multiplier else (F(1) / r).astype(F)), encode((x * r[:, None]).astype(F), elem)


# name -> (the mxjit definition, the numpy implementation, the cast's saturation)
R = mx.recipes
RECIPES = {
    "deepgemm": (lambda e: R.deepgemm(e, False), lambda x, e: deepgemm(x, e, False), mx.Saturate.none),
    "deepgemm_ue8m0": (lambda e: R.deepgemm(e, True), lambda x, e: deepgemm(x, e, True), mx.Saturate.none),
    "vllm": (lambda e: R.vllm_group(e, False), lambda x, e: vllm(x, e, False), mx.Saturate.finite),
    "vllm_ue8m0": (lambda e: R.vllm_group(e, True), lambda x, e: vllm(x, e, True), mx.Saturate.finite),
    "vllm_eps1e-6": (lambda e: R.vllm_group(e, False, 1e-6), lambda x, e: vllm(x, e, False, 1e-6), mx.Saturate.finite),
    "sglang": (lambda e: R.sglang_group(e, False), lambda x, e: sglang(x, e, False), mx.Saturate.finite),
    "sglang_ue8m0": (lambda e: R.sglang_group(e, True), lambda x, e: sglang(x, e, True), mx.Saturate.finite),
    "te_pow2": (lambda e: R.transformer_engine(e, True), lambda x, e: transformer_engine(x, e, True), mx.Saturate.finite),
    "te": (lambda e: R.transformer_engine(e, False), lambda x, e: transformer_engine(x, e, False), mx.Saturate.finite),
    "torchao_blockwise": (lambda e: R.torchao_blockwise(e), torchao_blockwise, mx.Saturate.finite),
    "f32_rowwise": (lambda e: R.f32_multiplier(e), f32_multiplier, mx.Saturate.finite),
    "f32_rowwise_pow2_multiplier": (lambda e: R.f32_multiplier(e, store_multiplier=True, pow2=True),
                                    lambda x, e: f32_multiplier(x, e, True, True), mx.Saturate.finite),
}
ELEMS = {"e4m3": mx.e4m3, "e5m2": mx.e5m2}


def run_mxjit(x, recipe, elem, block=None, e8m0=False):
    """Scales (uint32 bits, or E8M0 bytes) and codes (uint8) of rows of x cast by `recipe` on the CPU backend,
    blocks along the whole row (or `block` wide)."""
    make, _, sat = RECIPES[recipe]
    d = make(ELEMS[elem])
    if e8m0:
        d.format = mx.ScaleFormat.e8m0
    v = mx.input("x", mx.f32, 2)
    s = mx.scale(mx.amax(mx.blocks(v, 1, mx.whole if block is None else block)), ELEMS[elem], d)
    p = mx.pipeline([mx.output("q", mx.cast(ELEMS[elem], v / s, mx.Round.nearest_even, sat)), mx.output("s", s)])
    if mx.cpu_backend() == "llvm":
        assert mx.jit(p).host_backend_note() == ""  # the LLVM backend runs it, not the reference
    q, sc = mxt.run(p, torch.from_numpy(np.ascontiguousarray(x, F)))
    q = q.view(torch.uint8).numpy()
    sc = sc.view(torch.uint8).numpy() if e8m0 else sc.view(torch.int32).numpy().view(np.uint32)
    return sc.reshape(sc.shape[0], -1), q


def check(x, recipe, elem, block=None, e8m0=False):
    got_s, got_q = run_mxjit(x, recipe, elem, block, e8m0)
    fn = np.errstate(all="ignore")(RECIPES[recipe][1])  # NaN and Inf are what the cases are about
    if block is None:
        want_s, want_q = fn(x, elem)
        want_s = want_s[:, None]
    else:  # blocks of `block` along the row, the last one a tail
        ss, qs = [], []
        for c0 in range(0, x.shape[1], block):
            s, q = fn(x[:, c0:c0 + block], elem)
            ss.append(s)
            qs.append(q)
        want_s, want_q = np.stack(ss, axis=1), np.concatenate(qs, axis=1)
    want_s = (bits(want_s) >> 23 & 0xFF).astype(np.uint8) if e8m0 else bits(want_s)
    bad_s = np.argwhere(got_s != want_s)
    assert bad_s.size == 0, f"{recipe} {elem}: {len(bad_s)} scales differ, first at {bad_s[0]}: " \
                            f"amax row {x[bad_s[0][0]][:4]}, mxjit {got_s[tuple(bad_s[0])]:#x}, numpy {want_s[tuple(bad_s[0])]:#x}"
    bad_q = np.argwhere(nan_codes_as_one(got_q, elem) != nan_codes_as_one(want_q, elem))
    assert bad_q.size == 0, f"{recipe} {elem}: {len(bad_q)} codes differ, first at {bad_q[0]}: x = " \
                            f"{x[tuple(bad_q[0])]!r}, mxjit {got_q[tuple(bad_q[0])]:#04x}, numpy {want_q[tuple(bad_q[0])]:#04x}"
    return got_s.size, got_q.size


def bf16_sweep():
    """65,280 rows: row i holds every finite bf16 value v_i as its amax, with -v_i and smaller elements."""
    u = np.arange(1 << 16, dtype=np.uint32) << 16
    v = u.view(F)
    v = v[np.isfinite(v)]
    assert v.size == 65280
    fr = np.array([1.0, -1.0, 0.7, -0.3, 0.0625, 0.0101, 1e-6, 0.0], F)
    return (v[:, None] * fr[None, :]).astype(F)


@pytest.mark.parametrize("recipe", list(RECIPES))
@pytest.mark.parametrize("elem", ["e4m3", "e5m2"])
def test_every_bf16_amax_every_recipe(recipe, elem):
    x = bf16_sweep()
    nscales, ncodes = check(x, recipe, elem)
    assert (nscales, ncodes) == (65280, 65280 * 8)


@pytest.mark.parametrize("recipe", ["deepgemm_ue8m0", "vllm_ue8m0", "sglang_ue8m0", "te_pow2"])
def test_power_of_two_recipes_stored_as_e8m0(recipe):
    x = bf16_sweep()
    x = x[np.abs(x[:, 0]) < F(1e38)]  # E8M0 stores powers of two up to 2^127: the exponent byte is the scale
    check(x, recipe, "e4m3", e8m0=recipe != "sglang_ue8m0")


def special_rows():
    """All-zero rows, NaN rows and rows holding one NaN, +-Inf, amax below each floor, amax exactly 448 * 2^k,
    subnormals only, 1e30 among tiny values; 300 wide."""
    rng = np.random.default_rng(34)
    rows = []
    base = (rng.standard_normal(300) * 3).astype(F)
    rows.append(np.zeros(300, F))
    rows.append(np.full(300, np.nan, F))
    for special in [np.nan, np.inf, -np.inf]:
        r = base.copy()
        r[17] = special
        rows.append(r)
    for amax in [1e-13, 1e-11, 5e-5, 1e-4, 2e-10, 1e-45]:
        r = (rng.uniform(-1, 1, 300) * amax).astype(F)
        r[5] = F(amax)
        rows.append(r)
    for k in range(-30, 31, 3):
        r = (base / np.abs(base).max() * F(448 * 2.0 ** k) * F(0.99)).astype(F)
        r[9] = F(-448 * 2.0 ** k)
        rows.append(r)
    rows.append((np.arange(300) % 13 * 2.0 ** -140).astype(F))  # subnormals only
    r = np.full(300, 2.0 ** -20, F)
    r[150] = F(1e30)
    rows.append(r)
    rows.append(np.full(300, F(3.3895314e38)))  # bf16's largest
    return np.stack(rows)


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_special_rows_whole_and_1x128_with_a_tail(recipe):
    x = special_rows()
    for elem in ["e4m3", "e5m2"]:
        check(x, recipe, elem)  # whole rows
        check(x, recipe, elem, block=128)  # 1x128 groups, the last one 44 wide


# ---- torchao 0.18's own torch functions (Float8 tensorwise / rowwise, run on CPU) ----

ao_utils = pytest.importorskip("torchao.float8.float8_utils")
ao_config = pytest.importorskip("torchao.float8.config")


def torchao_float8(x, dim, pow2):
    """tensor_to_scale (AXISWISE along `dim`, or TENSORWISE for None) and to_fp8_saturated(x * scale)."""
    G = ao_config.ScalingGranularity
    if dim is None:
        s = ao_utils.tensor_to_scale(x, torch.float8_e4m3fn, round_scales_to_power_of_2=pow2)
    else:
        s = ao_utils.tensor_to_scale(x, torch.float8_e4m3fn, scaling_granularity=G.AXISWISE, axiswise_dim=dim,
                                     round_scales_to_power_of_2=pow2)
    return s, ao_utils.to_fp8_saturated(x.to(torch.float32) * s, torch.float8_e4m3fn)


@pytest.mark.parametrize("pow2", [False, True])
@pytest.mark.parametrize("case", ["rowwise", "colwise", "tensorwise", "3d_colwise", "3d_rowwise"])
def test_torchao_float8_rowwise_tensorwise_bit_exact(case, pow2):
    g = torch.Generator().manual_seed(7)
    shape = (3, 17, 129) if case.startswith("3d") else (37, 300)
    x = (torch.randn(shape, generator=g) * torch.exp2(torch.randint(-20, 20, shape, generator=g))).to(torch.bfloat16)
    x.view(-1)[11] = 0.0
    if len(shape) == 2:
        x[5] = 0.0  # an all-zero row
        x[7, :] = 2.0 ** -130  # subnormals only
    dim = {"rowwise": -1, "colwise": 0, "tensorwise": None, "3d_colwise": 1, "3d_rowwise": -1}[case]
    want_s, want_q = torchao_float8(x, dim, pow2)
    v = mx.input("x", mx.bf16, len(shape))
    if dim is None:
        b = mx.blocks(v, (0, 1), (mx.whole, mx.whole))
    else:
        b = mx.blocks(v, dim % len(shape), mx.whole)
    s = mx.f32_scale(mx.amax(b), mx.e4m3, store_multiplier=True, pow2=pow2)
    p = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / s)), mx.output("s", s)])
    q, sc = mxt.run(p, x)
    assert torch.equal(sc.reshape(want_s.shape).view(torch.int32), want_s.view(torch.int32)), case
    assert torch.equal(q.view(torch.uint8), want_q.view(torch.uint8)), case


# ---- the Python builders ----

def test_scale_def_fields_and_misuse():
    a = mx.amax_var()
    d = mx.ScaleDef(stored=mx.fmax(a, 1e-10) / 448.0, factor=mx.stored_var(), apply=mx.Apply.divide,
                    clamp=mx.Clamp.ignore_nan, clamp_lo=-448, clamp_hi=448, amax_nan=mx.AmaxNan.ignore)
    v = mx.input("x", mx.bf16, 2)
    s = mx.scale(mx.amax(mx.blocks(v, 1, 128)), mx.e4m3, d)
    assert s.definition == mx.scale(mx.amax(mx.blocks(v, 1, 128)), mx.e4m3, R.vllm_group(mx.e4m3, False)).definition
    assert d.apply == mx.Apply.divide and d.zero_if is None and d.format == mx.ScaleFormat.f32
    assert mx.whole == mx.kWholeAxis == -1
    with pytest.raises(mx.UsageError, match="ScaleDef::stored is missing"):
        mx.scale(mx.amax(mx.blocks(v, 1, 128)), mx.e4m3, mx.ScaleDef())
    with pytest.raises(mx.UsageError, match="not a power of two"):
        mx.scale(mx.amax(mx.blocks(v, 1, 128)), mx.e4m3, mx.ScaleDef(stored=a / 448.0, format=mx.ScaleFormat.e8m0))
    with pytest.raises(TypeError):
        mx.where(a, 1.0, 2.0)  # a value is not a condition
    c = ~((a == 0.0) | mx.isnan(a)) & (a < 1e30) & (a >= 1e-30) & (a > 0.0) & (a <= 2.0) & mx.isinf(a) | mx.never()
    assert "or(" in repr(c) and "not(" in repr(c)
    text = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / s)), mx.output("s", s)]).to_text()
    assert text.startswith("bf16[2] -> fp8.e4m3 scale(stored=div(fmax(amax,1e-10),448)")
    assert mx.parse_pipeline(text).hash == mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / s)),
                                                        mx.output("s", s)]).hash
