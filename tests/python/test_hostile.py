"""Issue 36's hostile inputs through the Python package (CPU tensors here; the same checks run before any
launch on a GPU): rank-1 tensors, blocks longer than their axis or past the limits, empty tensors with huge
other extents, oversized and malformed spec text. Each either runs bit-exactly like a reference input or
raises a Python exception that names the rule -- never a crash, a hang or a silent result."""

import time

import pytest

torch = pytest.importorskip("torch")

import mxjit  # noqa: E402
import mxjit.torch as mxt  # noqa: E402

from cases import rand  # noqa: E402


def _bytes(t):
    return t.contiguous().view(torch.uint8)


@pytest.mark.parametrize("block", [8, 32, 256])
def test_rank1_casts_equal_the_same_row_in_2d(block):
    x = rand((1000 // block * block,))
    q1, s1 = mxt.quantize(x, "e4m3", block, axis=0)
    q2, s2 = mxt.quantize(x.reshape(1, -1), "e4m3", block, axis=1)
    assert torch.equal(_bytes(q1), _bytes(q2.reshape(-1))) and torch.equal(_bytes(s1), _bytes(s2.reshape(-1)))


def test_a_block_longer_than_its_axis_is_refused_by_name_or_is_one_block():
    x = rand((4, 64))
    try:
        q, s = mxt.quantize(x, "e4m3", 256)
    except ValueError as e:
        assert "256" in str(e)
    else:
        assert s.shape == (4, 1)
        want_q, want_s = mxt.quantize(torch.cat([x, torch.zeros(4, 192, dtype=x.dtype)], 1), "e4m3", 256)
        assert torch.equal(_bytes(s), _bytes(want_s)) and torch.equal(_bytes(q), _bytes(want_q[:, :64]))


@pytest.mark.parametrize("block", [2**31, 2**40, 2**62])
def test_huge_blocks_are_one_block_of_the_axis_or_a_value_error(block):
    x = rand((4, 64))
    try:
        q, s = mxt.quantize(x, "e4m3", block)
    except ValueError as e:
        assert str(block) in str(e)
    else:
        want_q, want_s = mxt.quantize(x, "e4m3", 64)
        assert torch.equal(_bytes(q), _bytes(want_q)) and torch.equal(_bytes(s), _bytes(want_s))


@pytest.mark.parametrize("shape", [(0, 2**40), (0, 2**20, 2**20), (2**40, 0)])
def test_empty_tensors_with_huge_other_extents_cost_nothing(shape):
    x = torch.empty(shape, dtype=torch.bfloat16)
    t0 = time.perf_counter()
    try:
        outs = mxt.quantize(x, "e4m3", 32, axis=-1)
    except ValueError as e:  # refused by a documented limit, by name
        assert "limit" in str(e) or "elements" in str(e), e
    else:
        assert all(o.numel() == 0 for o in outs)
    assert time.perf_counter() - t0 < 5.0


def test_a_spec_of_thousands_of_casts_is_refused_quickly():
    spec = "bf16[2] -> " + " ; ".join(["mxfp8.e4m3"] * 3000)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="outputs"):
        mxt.run(spec, rand((4, 32)))
    assert time.perf_counter() - t0 < 5.0


@pytest.mark.parametrize("spec", ["", "bf16[2] -> mxfp8.e4m3 \x1b[31mrceil", "bf16[2] -> mxfp8.e4m3 blocks(1,\x00)"])
def test_malformed_specs_name_the_problem_with_control_characters_escaped(spec):
    with pytest.raises(ValueError) as e:
        mxt.run(spec, rand((4, 32)))
    assert "\x1b" not in str(e.value) and "\x00" not in str(e.value)


def test_pipeline_builders_refuse_huge_blocks_by_name():
    x = mxjit.input("x", mxjit.bf16, 2)
    with pytest.raises(mxjit.UsageError):
        mxjit.jit(mxjit.pipeline([mxjit.output("s", mxjit.e8m0_scale(mxjit.amax(mxjit.blocks(x, 1, 2**62)), mxjit.e4m3,
                                                                        mxjit.ScaleRule.floor))]), "sm_90a")
