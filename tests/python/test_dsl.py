"""The Python DSL mirrors the C++ one: same IR, same hashes, same text form, same errors.

The hashes of the C++ side come from the program tests/python/hash_corpus.cpp (built as
build/tests/mxjit_hash_corpus; MXJIT_HASH_CORPUS names it explicitly, as scripts/test_python.sh does).
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import mxjit as mx

ROOT = pathlib.Path(__file__).resolve().parents[2]


def python_corpus():
    c = {}
    x = mx.input("x", mx.bf16, mx.rank(2))
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 0, 32)), mx.e4m3, mx.ScaleRule.rceil)
    c["dim1_blocked"] = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x / s), mx.layout.col_major()),
                                     mx.output("s", s, mx.layout.blocked_128x4())])
    x = mx.input("x", mx.f32, 3)
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 1, 32)), mx.e2m1, mx.ScaleRule.floor, mx.NanPolicy.satfinite)
    c["fp4_expert"] = mx.pipeline([mx.output("q", mx.cast(mx.e2m1, x / s), mx.layout.expert_col_major()),
                                   mx.output("s", s, mx.layout.blocked_8x4())])
    g = mx.input("gate", mx.bf16, 2)
    u = mx.input("up", mx.bf16, 2)
    b = mx.vec("bias", mx.f32, 1, 2)
    v = mx.swiglu(g, u) * 0.5 + b - mx.relu(-g) / 3.0
    s = mx.e8m0_scale(mx.amax(mx.blocks(v, 1, 32)), mx.e4m3, mx.ScaleRule.even)
    c["swiglu_prologue"] = mx.pipeline([
        mx.output("q", mx.cast(mx.e4m3, v / s)), mx.output("s", s),
        mx.output("y", mx.gelu(v, mx.Gelu.erf) + mx.exp(mx.sigmoid(v)) + mx.silu(mx.abs(v)), mx.bf16),
        mx.output("amax", mx.amax(v))])
    x = mx.input("x", mx.f16, 2)
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 1, 32)), mx.e4m3, mx.ceil_log2(mx.amax_var() * (1.0 / 448)) + 1.0)
    q = mx.cast(mx.e4m3, x / s, mx.Round.stochastic, mx.Saturate.finite, seed=7, offset=3, flush_subnormals=True)
    c["custom_rule_sr"] = mx.pipeline([mx.output("q", q), mx.output("s", s)])
    x = mx.input("x", mx.bf16, 2)
    s = mx.nvfp4_scale(mx.amax(mx.blocks(x, (0, 1), (16, 16))), mx.Nvfp4Convention.torchao)
    c["nvfp4_2d"] = mx.pipeline([mx.output("q", mx.cast(mx.e2m1, x / s)), mx.output("s", s),
                                 mx.output("amax", mx.amax(x))])
    x = mx.input("x", mx.bf16, 2)
    s = mx.f32_scale(mx.amax(mx.groups(x, 0, mx.offsets("offs"))), mx.e5m2, store_multiplier=True, pow2=True)
    m = mx.e8m0_scale(mx.amax(mx.blocks(x, 1, 32)), mx.int8, mx.ScaleRule.ceil)
    c["groups_grouped"] = mx.pipeline([
        mx.output("q", mx.cast(mx.e5m2, x / s), mx.layout.col_major()), mx.output("s", s),
        mx.output("q1", mx.cast(mx.int8, x / m)),
        mx.output("s1", m, mx.layout.grouped_blocked_128x4(mx.offsets("offs"), 0))])
    y = mx.dequantize("codes", "scales", mx.e2m1, mx.ScaleFormat.e8m0, 2, 1, 32)
    c["dequant_fp4"] = mx.pipeline([mx.output("y", y, mx.f32, mx.layout.permuted([1, 0]))])
    x = mx.input("x", mx.bf16, 2)
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 1, 32)), mx.fp_format(3, 3), mx.ScaleRule.rceil)
    t = mx.max(mx.min(x, 2.0), -2.0)
    s2 = mx.e8m0_scale(mx.amax(mx.blocks(t, 0, 64)), mx.e3m2, mx.ScaleRule.floor)
    c["user_format_two_casts"] = mx.pipeline([mx.output("q", mx.cast(mx.fp_format(3, 3), x / s)), mx.output("s", s),
                                              mx.output("q1", mx.cast(mx.e3m2, t / s2)), mx.output("s1", s2)])
    x = mx.input("x", mx.bf16, 2)
    s = mx.e8m0_scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3, mx.ScaleRule.ceil)
    f = mx.f32_scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3)
    t = mx.f32_scale(mx.amax(mx.blocks(x, (0, 1), (128, 128))), mx.e4m3)
    L = mx.layout
    c["layouts_peers"] = mx.pipeline([
        mx.output("q", mx.cast(mx.e4m3, x / s)), mx.output("s", s, L.mn_major_tma_packed()),
        mx.output("q1", mx.cast(mx.e4m3, x / f)), mx.output("s1", f, L.mn_major_tma()),
        mx.output("q2", mx.cast(mx.e4m3, x / t)), mx.output("s2", t, L.gemm_ready_2d_t()),
        mx.output("s3", s, L.modes([L.rest, L.rows / 16, L.cols, L.rows % 16]).align(L.cols, 2))])
    x = mx.input("x", mx.bf16, 2)
    R = mx.recipes
    dg = mx.scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3, R.deepgemm(mx.e4m3, True))
    vl = mx.scale(mx.amax(mx.blocks(x, (0, 1), (128, 128))), mx.e4m3, R.vllm_group(mx.e4m3, True, 1e-6))
    sg = mx.scale(mx.amax(mx.blocks(x, 1, mx.whole)), mx.e5m2, R.sglang_group(mx.e5m2, True))
    te = mx.scale(mx.amax(mx.blocks(x, 0, mx.whole)), mx.e4m3, R.transformer_engine(mx.e4m3, True, 1e-5, 65504.0))
    ta = mx.scale(mx.amax(mx.blocks(x, (0, 1), (mx.whole, mx.whole))), mx.e4m3, R.torchao_blockwise(mx.e4m3))
    rw = mx.scale(mx.amax(mx.blocks(x, 1, mx.kWholeAxis)), mx.e4m3,
                  R.f32_multiplier(mx.e4m3, store_multiplier=True, pow2=True))
    ex = mx.scale(mx.amax(mx.blocks(x, 1, 32)), mx.e2m1,
                  R.e8m0_exponent(mx.floor_log2(mx.amax_var(), 1) - mx.ceil_log2(mx.Expr(6.0)) + mx.exp2(mx.Expr(0.5)),
                                  mx.NanPolicy.satfinite))
    a = mx.amax_var()
    d = mx.ScaleDef(format=mx.ScaleFormat.bf16)
    d.stored = mx.where(mx.isnan(a) | (a == 0.0), 1.0,
                        mx.pow2_floor(mx.fmin(a, 1e30) / 448.0) + mx.pow2_ceil(mx.abs(-a)) * 0.0)
    d.factor = mx.max(mx.min(1.0 / mx.stored_var(), 1e6), mx.fmax(mx.stored_var(), -1.0)) - 0.0
    d.zero_if = (a <= 1e-30) & ~(a > 1e38)
    d.nan_if = mx.isinf(a) | (a >= 3e38) | (a < -1.0)
    d.apply = mx.Apply.divide
    d.clamp = mx.Clamp.propagate_nan
    d.clamp_lo, d.clamp_hi = -448, 448
    d.amax_nan = mx.AmaxNan.ignore
    us = mx.scale(mx.amax(mx.blocks(x, (0, 1), (mx.whole, 128))), mx.e4m3, d)
    c["scale_defs_whole"] = mx.pipeline([
        mx.output("q", mx.cast(mx.e4m3, x / dg, mx.Round.nearest_even, mx.Saturate.none)), mx.output("s", dg),
        mx.output("q1", mx.cast(mx.e4m3, x / vl)), mx.output("s1", vl, L.col_major()),
        mx.output("q2", mx.cast(mx.e5m2, x / sg)), mx.output("s2", sg),
        mx.output("q3", mx.cast(mx.e4m3, x / te), L.col_major()), mx.output("s3", te),
        mx.output("q4", mx.cast(mx.e4m3, x / ta)), mx.output("s4", ta),
        mx.output("q5", mx.cast(mx.e4m3, x / rw)), mx.output("s5", rw),
        mx.output("q6", mx.cast(mx.e2m1, x / ex)), mx.output("s6", ex),
        mx.output("q7", mx.cast(mx.e4m3, x / us)), mx.output("s7", us)])
    g = mx.input("gate", mx.bf16, 2)
    u = mx.input("up", mx.bf16, 2)
    v = mx.round_to(mx.round_to(mx.silu(g), mx.bf16) * u, mx.bf16)
    s = mx.scale(mx.amax(mx.blocks(v, 1, 128)), mx.e4m3, mx.recipes.sglang_group(mx.e4m3, False))
    c["sglang_silu_and_mul"] = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / s)), mx.output("s", s),
                                            mx.output("h", mx.round_to(g, mx.f16), mx.f16)])
    x3 = mx.input("x", mx.bf16, 3)
    s = mx.scale(mx.amax(mx.blocks(x3, 2, 128)), mx.e4m3, mx.recipes.sglang_group(mx.e4m3, False))
    c["sglang_masked"] = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x3 / s)), mx.output("s", s, L.mn_major_tma())],
                                     mask=mx.mask(1, 0, "masked_m"))
    return c


def cxx_hashes():
    exe = os.environ.get("MXJIT_HASH_CORPUS")
    if exe is None:
        exe = ROOT / "build" / "tests" / "mxjit_hash_corpus"
        if not exe.exists():
            pytest.skip("build/tests/mxjit_hash_corpus is not built (set MXJIT_HASH_CORPUS)")
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return dict(line.split() for line in out.splitlines())


def test_python_pipelines_hash_as_the_cxx_ones():
    want = cxx_hashes()
    got = {name: p.hash for name, p in python_corpus().items()}
    assert set(got) == set(want)
    for name in want:
        assert got[name] == want[name], name


def test_text_form_round_trip_and_hash():
    for text in ["bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4",
                 "f32[3] -> mxfp4.e2m1 rceil satfinite blocks(1,32) q:perm(0,2,1) s:blocked128x4",
                 "bf16[2] -> nvfp4 torchao blocks(0,1,16x16) sr(7,3) q:row_major s:linear amax",
                 "bf16[2] -> fp8.e4m3 groups(0,offs) ; mxfp8.e5m2 even blocks(0,32) q:col_major"]:
        p = mx.parse_pipeline(text)
        assert mx.parse_pipeline(p.to_text()) == p
        assert mx.to_text(p) == p.to_text()
    c = python_corpus()
    assert c["dim1_blocked"] == mx.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4")
    with pytest.raises(mx.UsageError, match="no short text form"):
        c["swiglu_prologue"].to_text()
    # Peer scale definitions and whole-axis blocks print as scale(...) and blocks(..,whole).
    t = c["scale_defs_whole"].to_text()
    assert mx.parse_pipeline(t) == c["scale_defs_whole"] and mx.parse_pipeline(t).to_text() == t
    assert "blocks(1,whole)" in t and "blocks(0,1,wholexwhole)" in t and "scale(format=bf16," in t and " nosat " in t


def test_misuse_raises_usage_error_a_value_error_naming_the_rule():
    x = mx.input("x", mx.bf16, 2)
    with pytest.raises(mx.UsageError, match=r"blocks\(x, axis=2, size=32\): axis 2 is out of range"):
        mx.blocks(x, 2, 32)
    with pytest.raises(ValueError, match="spec:1:23: unknown rule 'rceli'"):
        mx.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceli blocks(0,32)")
    with pytest.raises(mx.UsageError, match="power of two"):
        mx.blocks(x, 1, 24)
    with pytest.raises(mx.UsageError, match="round_to: dtype f32 is not bf16 or f16"):
        mx.round_to(x, mx.f32)
    assert issubclass(mx.UsageError, ValueError) and issubclass(mx.UsageError, mx.Error)
    assert issubclass(mx.CompileError, RuntimeError) and issubclass(mx.CudaError, RuntimeError)


def test_round_to_equals_torchs_conversions_on_every_kind_of_fp32():
    # round_to(x, bf16 / f16) on the CPU backend against torch's own float -> bfloat16 / float16 (round to
    # nearest even, subnormals, overflow to Inf), read back as float: random bit patterns, every bf16 tie
    # and its neighbours, and the edges of both formats.
    torch = pytest.importorskip("torch")
    import mxjit.torch as mxt

    rng = np.random.default_rng(7)
    ties = (np.arange(65536, dtype=np.uint32) << 16)[:, None] | np.array([0x7FFF, 0x8000, 0x8001], np.uint32)
    edges = np.array([0x7F7F8000, 0x7F7FFFFF, 0x477FEFFF, 0x477FF000, 0x33000000, 0x33000001, 0x387FE000, 0x7F800000,
                      0xFF800000, 0x7FC00000, 0xFFBFFFFF, 0x00000001, 0x80000000, 0x0], np.uint32)
    bits = np.concatenate([rng.integers(0, 2**32, 262144 - ties.size - edges.size, dtype=np.uint64).astype(np.uint32),
                           ties.ravel(), edges])
    x = torch.from_numpy(bits.view(np.float32).reshape(512, 512).copy())
    xin = mx.input("x", mx.f32, 2)
    p = mx.pipeline([mx.output("b", mx.round_to(xin, mx.bf16), mx.f32), mx.output("h", mx.round_to(xin, mx.f16), mx.f32)])
    b, h = mxt.run(p, x)
    for got, want in ((b, x.to(torch.bfloat16).float()), (h, x.to(torch.float16).float())):
        nan = torch.isnan(want)
        assert torch.equal(torch.isnan(got), nan)
        assert torch.equal(got[~nan].view(torch.int32), want[~nan].view(torch.int32))


def test_pipeline_values():
    c = python_corpus()
    p = c["groups_grouped"]
    assert [d.name for d in p.inputs] == ["x", "offs"]
    assert [o.name for o in p.outputs] == ["q", "s", "q1", "s1"]
    assert "multiplier" in p.ir and "pow2" in p.ir
    assert p == c["groups_grouped"] and hash(p) == hash(c["groups_grouped"])
    assert p != c["dim1_blocked"]
    g = c["dim1_blocked"].output_geometry(1, [100, 200])
    assert g.view_shape == [256 * 4] and g.row_axis == 1 and g.col_axis == 0
    assert str(mx.layout.grouped_blocked_128x4(mx.offsets("offs"), 0)) == "grouped_blocked128x4(0,offs)"
    L = mx.layout
    assert L.modes([L.rest, L.cols / 4, L.rows, L.cols % 4]).align(L.rows, 4).pack(4) == L.mn_major_tma_packed()
    assert str(L.modes([L.rest, L.cols, L.rows]).align(L.rows, 4)) == "mn_major_tma"
    assert L.mn_major_tma_packed().definition == "modes(*,c/4,r,c%4).align(r,4).pack(4)"
    assert mx.Layout.parse("modes(*,c,r).align(r,4)") == L.mn_major_tma()
    assert hash(L.mn_major_tma()) == hash(mx.Layout.parse("mn_major_tma"))
    with pytest.raises(mx.UsageError, match="chain"):
        L.modes([L.rest, L.rows / 64, L.rows % 32])
    x = mx.input("x", mx.bf16, 2)
    with pytest.raises(mx.UsageError, match="4 bytes"):
        mx.output("s", mx.f32_scale(mx.amax(mx.blocks(x, 1, 128)), mx.e4m3), L.mn_major_tma_packed())
    g = c["layouts_peers"].output_geometry(1, [10, 128 * 9])
    assert g.view_shape == [12, 3] and g.view_strides == [1, 12] and g.storage_bytes == 144
    assert mx.e4m3.max_normal == 448 and mx.e2m1.packed and mx.fp_format(3, 3).bits == 7


def test_kernel_compiles_without_a_gpu_and_runs_on_host_memory():
    p = python_corpus()["dim1_blocked"]
    k = mx.jit(p)
    assert k.workspace_bytes == 0
    assert "__global__" in k.source("sm_90a")
    mx.warmup([k], archs=["sm_90a", "sm_100a"])
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 96), dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    g0, g1 = p.output_geometry(0, [64, 96]), p.output_geometry(1, [64, 96])
    q = np.full(64 * 96, 0xAB, np.uint8)
    s = np.full(g1.view_shape[0], 0xAB, np.uint8)
    used = k.run_host((x.ctypes.data, q.ctypes.data, s.ctypes.data), ((64, 96), g0.view_shape, g1.view_shape),
                      ((96, 1), g0.view_strides, g1.view_strides))
    assert used == mx.cpu_backend()
    # The same through the other host backend gives the same bytes.
    q2, s2 = np.full_like(q, 0x5A), np.full_like(s, 0x5A)
    ref = mx.jit(mx.parse_pipeline(p.to_text()))
    ref.run_host((x.ctypes.data, q2.ctypes.data, s2.ctypes.data), ((64, 96), g0.view_shape, g1.view_shape),
                 ((96, 1), g0.view_strides, g1.view_strides))
    assert (q == q2).all() and (s == s2).all()
    # A view that does not fit is refused by name.
    with pytest.raises(mx.UsageError, match="output 'q'"):
        k.run_host((x.ctypes.data, q.ctypes.data, s.ctypes.data), ((64, 96), (64, 96), g1.view_shape),
                   ((96, 1), (96, 1), g1.view_strides))
    with pytest.raises(mx.UsageError, match="one entry per input and output"):
        k.run_host((x.ctypes.data,), ((64, 96),), ((96, 1),))


def test_nvfp4_kernel_needs_workspace():
    p = mx.parse_pipeline("bf16[2] -> nvfp4 te blocks(1,16)")
    assert mx.jit(p).workspace_bytes == 4


@pytest.mark.skipif(mx.gpu_available(), reason="checks the no-GPU message")
def test_launch_without_a_gpu_is_a_cuda_error():
    k = mx.jit(python_corpus()["dim1_blocked"])
    with pytest.raises(mx.CudaError) as e:
        k.launch(0, 0, (1, 2, 3), ((32, 32), (32, 32), (1024,)), ((32, 1), (1, 32), (1,)))
    assert e.value.call in ("dlopen", "dlsym", "cuInit", "cuDeviceGetCount")
    assert "GPU" in str(e.value)


def test_prepare_checks_its_arguments_and_launch_needs_a_gpu():
    k = mx.jit(python_corpus()["dim1_blocked"])
    shapes, strides = ((32, 32), (32, 32), (1024,)), ((32, 1), (1, 32), (1,))
    with pytest.raises(mx.UsageError, match="one entry per input and output"):
        k.prepare(0, shapes[:2], strides[:2])
    with pytest.raises(mx.UsageError, match="tensor 1 has 2 extents but 1 strides"):
        k.prepare(0, shapes, ((32, 1), (1,), (1,)))
    with pytest.raises(mx.UsageError, match="device -1: not a CUDA device ordinal"):
        k.prepare(-1, shapes, strides)
    pl = k.prepare(0, shapes, strides)
    assert pl.pointers == 3
    if not mx.gpu_available():
        with pytest.raises(mx.CudaError):
            pl.launch(0, (16, 4096, 8192))
    with pytest.raises(mx.UsageError, match=r"ptrs needs one device address per input and output \(1 \+ 2\), got 2"):
        pl.launch(0, (16, 4096))


def test_import_needs_neither_torch_nor_a_gpu():
    code = "import sys, mxjit; mxjit.parse_pipeline('bf16[2] -> mxfp8.e4m3'); assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})


def test_launch_checks_misaligned_overlapping_and_null_pointers():
    k = mx.jit(mx.parse_pipeline("bf16[2] -> mxfp8.e4m3 rceil blocks(1,32)"))
    x = np.zeros(64 * 64 + 1, np.uint16)
    q = np.zeros(64 * 64, np.uint8)
    s = np.zeros(128, np.uint8)
    shapes, strides = ((64, 64), (64, 64), (64, 2)), ((64, 1), (64, 1), (2, 1))
    with pytest.raises(mx.UsageError, match="input 'x': data pointer is not aligned to its 2-byte element"):
        k.run_host((x.ctypes.data + 1, q.ctypes.data, s.ctypes.data), shapes, strides)
    with pytest.raises(mx.UsageError, match="output 's': overlaps output 'q'"):
        k.run_host((x.ctypes.data, q.ctypes.data, q.ctypes.data + 8), shapes, strides)
    with pytest.raises(mx.UsageError, match="input 'x': data pointer is null"):
        k.run_host((0, q.ctypes.data, s.ctypes.data), shapes, strides)
    with pytest.raises(mx.UsageError, match="expected an int"):
        k.run_host(("x", q.ctypes.data, s.ctypes.data), shapes, strides)
