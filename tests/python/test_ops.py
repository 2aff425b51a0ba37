"""The torch ops on CPU: fake (meta) outputs equal the real ones, opcheck passes for every op,
torch.compile(fullgraph=True) traces them without graph breaks and gives eager's bits."""

import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import mxjit.torch as mxt  # noqa: E402

from cases import op_cases, rand  # noqa: E402


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _describe(ts):
    return [(tuple(t.shape), tuple(t.stride()), t.dtype) for t in ts]


def _to_fake(mode, a):
    if isinstance(a, torch.Tensor):
        return mode.from_tensor(a)
    if isinstance(a, list):
        return [_to_fake(mode, t) for t in a]
    return a


def _to_meta(a):
    if isinstance(a, torch.Tensor):
        return a.to("meta")
    if isinstance(a, list):
        return [_to_meta(t) for t in a]
    return a


CASES = op_cases()


@pytest.mark.parametrize("name,op,args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_fake_and_meta_outputs_equal_real_ones(name, op, args):
    real = _describe(_flat(op(*args)))
    with FakeTensorMode() as mode:
        fake = _describe(_flat(op(*[_to_fake(mode, a) for a in args])))
    assert fake == real
    meta = _flat(op(*[_to_meta(a) for a in args]))
    assert all(t.device.type == "meta" for t in meta)
    assert _describe(meta) == real


@pytest.mark.parametrize("name,op,args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_opcheck(name, op, args):
    # opcheck's schema test does arithmetic on the inputs, which torch lacks for float8 on CPU: the
    # ops take the same bytes as uint8 (the fake test above covers the float8 dtypes).
    args = [a.view(torch.uint8) if isinstance(a, torch.Tensor) and a.dtype.itemsize == 1 and a.dtype.is_floating_point
            else a for a in args]
    torch.library.opcheck(op, args)


def _step(x, offs):
    # A training-step shape: elementwise work, every kind of cast, consumers of the outputs.
    y = x * 1.5
    q0, s0 = mxt.to_mxfp8_dim0(y)
    q1, s1 = mxt.to_mxfp8_dim1(y, 32, "floor")
    r0, c0, rs, cs = mxt.mxfp8_quantize(y, True, True)
    qg, sg = mxt.quantize_grouped(y, offs)
    qp, sp = mxt.fp8_per_group_colwise_scales(y, offs, torch.float8_e4m3fn, True)
    q4, s4 = mxt.quantize(y, "e2m1", 32, scale_layout="blocked")
    d = mxt.dequantize(q0, s0, out_dtype=torch.float32)
    return (q0.view(torch.uint8), s0.view(torch.uint8), q1.view(torch.uint8), s1.view(torch.uint8),
            r0.view(torch.uint8), c0.view(torch.uint8), rs.view(torch.uint8), cs.view(torch.uint8),
            qg.view(torch.uint8), sg.view(torch.uint8), qp.view(torch.uint8), sp, q4, s4.view(torch.uint8),
            d.sum(dim=0))


def _assert_same(a, b):
    for u, v in zip(a, b):
        assert u.shape == v.shape and u.stride() == v.stride() and u.dtype == v.dtype
        assert torch.equal(u.view(torch.uint8) if u.dtype != torch.float32 else u.view(torch.int32),
                           v.view(torch.uint8) if v.dtype != torch.float32 else v.view(torch.int32))


@pytest.mark.parametrize("backend,dynamic", [("aot_eager", True), ("inductor", False), ("inductor", True)])
def test_compile_fullgraph_no_breaks_bit_identical(backend, dynamic):
    torch._dynamo.reset()
    x = rand((256, 128), seed=5)
    offs = torch.tensor([64, 64, 192, 256], dtype=torch.int32)
    eager = _step(x, offs)
    explain = torch._dynamo.explain(_step)(x, offs)
    assert explain.graph_break_count == 0 and explain.graph_count == 1
    compiled = torch.compile(_step, fullgraph=True, backend=backend, dynamic=dynamic)
    _assert_same(compiled(x, offs), eager)
    if dynamic:  # a second shape through the same dynamic graph
        x2 = rand((192, 96), seed=6)
        offs2 = torch.tensor([32, 160, 192], dtype=torch.int32)
        _assert_same(compiled(x2, offs2), _step(x2, offs2))


def test_compiled_output_strides_follow_the_fake_kernels():
    f = torch.compile(lambda x: mxt.to_mxfp8_dim1(x), fullgraph=True, backend="inductor")
    q, s = f(rand((128, 64)))
    assert q.stride() == (1, 128) and s.shape == (64, 4) and s.stride() == (4, 1)
    assert q.dtype == torch.float8_e4m3fn and s.dtype == torch.float8_e8m0fnu


def test_register_pipeline_names_are_kept_per_pipeline():
    """The name `run` knows a pipeline by: its text form (or "hash:<hex>" where it has none), the same
    on every call (kept by hash, so equal pipelines built twice share it), and distinct pipelines
    keep distinct names."""
    import mxjit as mx  # noqa: PLC0415

    def rowwise(elem):
        x = mx.input("x", mx.bf16, 2)
        s = mx.f32_scale(mx.amax(mx.blocks(x, 1, mx.kWholeAxis)), elem, store_multiplier=True, pow2=True)
        return mx.pipeline([mx.output("q", mx.cast(elem, x / s)), mx.output("s", s)])

    a, b, c = rowwise(mx.e4m3), rowwise(mx.e4m3), rowwise(mx.e5m2)
    na = mxt.register_pipeline(a)
    assert na == a.to_text() and mxt.register_pipeline(a) == na and mxt.register_pipeline(b) == na
    assert mxt.register_pipeline(c) == c.to_text() != na
    x = mx.input("x", mx.bf16, 2)
    v = mx.silu(x) * 2.0
    sv = mx.e8m0_scale(mx.amax(mx.blocks(v, 1, 32)), mx.e4m3, mx.ScaleRule.rceil)
    pv = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, v / sv)), mx.output("s", sv)])
    nv = mxt.register_pipeline(pv)
    assert nv == mxt.register_pipeline(pv)
    xt = rand((8, 64), seed=3)
    q1, s1 = mxt.run(a, xt)
    q2, s2 = mxt.run(na, xt)
    assert torch.equal(q1.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s1, s2)
