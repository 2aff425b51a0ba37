"""Masked rows from Python (mx.mask, SGLang's masked_m): the pipeline's value, its refusals, and
mxjit.torch.run on CPU tensors and (where there is one) the GPU, where a masked run equals the
unmasked run at every real row and leaves every masked row's bytes as they were."""

import pytest

torch = pytest.importorskip("torch")

import mxjit as mx  # noqa: E402
import mxjit.torch as mxt  # noqa: E402


def sglang_outputs(layout=None):
    x = mx.input("x", mx.bf16, 3)
    s = mx.scale(mx.amax(mx.blocks(x, 2, 128)), mx.e4m3, mx.recipes.sglang_group(mx.e4m3, False))
    return [mx.output("q", mx.cast(mx.e4m3, x / s)), mx.output("s", s, layout or mx.layout.linear())]


def test_mask_is_part_of_the_pipeline_value():
    p = mx.pipeline(sglang_outputs(), mask=mx.mask(1, 0, "masked_m"))
    assert repr(p.mask) == "mxjit.mask(1, 0, 'masked_m')"
    assert (p.mask.axis, p.mask.by, p.mask.counts) == (1, 0, "masked_m")
    assert [(d.name, d.kind) for d in p.inputs] == [("x", "tensor"), ("masked_m", "counts")]
    assert "mask axis1 by0 counts masked_m" in p.ir
    plain = mx.pipeline(sglang_outputs())
    assert plain.mask is None and plain != p
    with pytest.raises(mx.UsageError, match="must differ"):
        mx.pipeline(sglang_outputs(), mask=mx.mask(1, 1, "m"))
    with pytest.raises(mx.UsageError, match="span axis 2"):
        mx.pipeline(sglang_outputs(), mask=mx.mask(2, 0, "m"))
    with pytest.raises(mx.UsageError, match="no short text form|neither 'x'"):
        p.to_text()


def devices():
    yield "cpu"
    if torch.cuda.is_available():
        yield "cuda"


@pytest.mark.parametrize("device", list(devices()))
@pytest.mark.parametrize("layout", ["linear", "mn_major_tma"])
def test_masked_run_equals_the_unmasked_one_at_real_rows(device, layout):
    E, T, K = 4, 70, 512
    lay = getattr(mx.layout, layout)()
    p = mx.pipeline(sglang_outputs(lay), mask=mx.mask(1, 0, "masked_m"))
    plain = mx.pipeline(sglang_outputs(lay))
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(E, T, K, generator=g) * 4).to(torch.bfloat16).to(device)
    counts = torch.tensor([T, 0, 33, 1], dtype=torch.int32, device=device)
    q, s = mxt.run(p, x, counts)
    q0, s0 = mxt.run(plain, x)
    assert q.shape == q0.shape and s.shape == s0.shape
    for e in range(E):
        n = int(counts[e])
        assert torch.equal(q[e, :n].cpu().view(torch.uint8), q0[e, :n].cpu().view(torch.uint8))
        assert torch.equal(s[e, :n].cpu(), s0[e, :n].cpu())
