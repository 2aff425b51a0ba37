"""bench/python/blockwise_casts.py: mxjit's pipelines for torchao 0.18's blockwise FP8 training casts give
torchao's bytes in torchao's layouts. On CPU tensors (the LLVM backend) against torchao's torch references
(torch_blockwise_scale_act_quant_lhs / _rhs / _weight_quant), on random data with magnitudes across many
binades; on a GPU (marker ``gpu``) against torchao's Triton kernels, whose layouts they must also match."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "python"))

import benchutil as bu  # noqa: E402
import blockwise_casts as bc  # noqa: E402
import peers  # noqa: E402

SHAPES = [(256, 384), (384, 128), (128, 640)]


def spread(m, k, seed, device="cpu"):
    """bf16 normals, each 128x128 tile and each row scaled by its own power of two in [2^-30, 2^30]: block
    amaxes across 60 binades (row scales make 1x128 and 128x1 groups of one tile differ too)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((m, k), generator=g)
    tiles = torch.randint(-20, 21, (m // 128, k // 128), generator=g).repeat_interleave(128, 0).repeat_interleave(128, 1)
    rows = torch.randint(-10, 11, (m, 1), generator=g)
    return (x * torch.exp2((tiles + rows).float())).to(torch.bfloat16).to(device)


def layout_of(t):
    return tuple(t.shape), t.stride()


@pytest.mark.parametrize("op", bc.OPS)
@pytest.mark.parametrize("m, k", SHAPES)
def test_mxjit_equals_torchao_torch_reference_on_cpu(op, m, k):
    x = spread(m, k, seed=m * 7 + k)
    mine = bc.mxjit_op(op)(x)
    want = bc.torch_reference(op).fn(x)
    d = bu.byte_diff(list(mine), list(want))
    assert d.equal, f"{op} {m}x{k}: {d}"
    assert [t.dtype for t in mine] == [torch.float8_e4m3fn, torch.float32]
    # torchao's Triton kernel's shapes and strides (the torch references differ for some ops)
    assert tuple(layout_of(t) for t in mine) == bc.triton_layout(op, m, k)


def zero_group_scale(floor: torch.Tensor) -> float:
    """The stored scale of an all-zero group whose amax is floored at `floor`: 1 / fp32(448 / fp64(floor))."""
    q = (448.0 / floor.to(torch.float64)).to(torch.float32)
    return float(1.0 / q)


def test_zero_groups_amax_at_448_2k_and_bf16_max():
    """All-zero 1x128 and 128x1 groups and a whole zero tile, an amax at 448 * 2^k, bf16's largest finite value:
    codes and scales as the torch references give them. One known difference: torch_blockwise_scale_act_quant_rhs
    floors the amax at 1e-12 in bf16 (clamp before .to(float64)), the other references in float64; mxjit's recipe
    floors at fp32(1e-12), which gives the float64 references' bits, as torchao's Triton kernels do (tl.clamp
    promotes a bf16 amax and its float bounds to fp32: triton/language/core.py, 3.6)."""
    x = spread(256, 256, seed=3)
    x[:128, 128:] = 0  # a whole tile: zero 1x128 groups, zero 128x1 groups
    x[0, :128] = 0
    x[1, :128] = 448.0 * 2.0 ** -20
    x[130, 128:] = torch.finfo(torch.bfloat16).max
    ours = zero_group_scale(torch.tensor(1e-12, dtype=torch.float64))
    assert ours == zero_group_scale(torch.tensor(1e-12, dtype=torch.float32))
    bf16_floor = zero_group_scale(torch.tensor(1e-12, dtype=torch.bfloat16))
    assert bf16_floor != ours
    for op in bc.OPS:
        mine, want = bc.mxjit_op(op)(x), bc.torch_reference(op).fn(x)
        assert bu.byte_diff([mine[0]], [want[0]]).equal, op
        if op in ("act_quant_rhs", "act_quant_transposed_lhs"):
            s, w = (mine[1], want[1]) if op == "act_quant_rhs" else (mine[1].t(), want[1].t())
            zero = torch.zeros_like(s, dtype=torch.bool)
            zero[0, 128:] = True  # (M/128, K): the 128x1 groups of the zero tile
            assert bu.byte_diff([s[~zero]], [w[~zero]]).equal, op
            assert (s[zero] == ours).all() and (w[zero] == bf16_floor).all(), op
        else:
            d = bu.byte_diff([mine[1]], [want[1]])
            assert d.equal, f"{op}: {d}"
            assert (mine[1] == ours).any(), op  # a zero group is there


def test_the_transposed_ops_are_views_of_one_pipeline():
    """act_quant_transposed_lhs is act_quant_rhs's memory, weight_quant_transposed_rhs a row-major cast of x."""
    assert bc.PLANS["act_quant_transposed_lhs"][:3] == bc.PLANS["act_quant_rhs"][:3]
    assert bc.pipeline("128x1", "col_major", "row_major") is bc.pipeline("128x1", "col_major", "row_major")
    x = spread(256, 384, seed=5)
    q, s = bc.mxjit_op("act_quant_rhs")(x)
    qt, st = bc.mxjit_op("act_quant_transposed_lhs")(x)
    assert torch.equal(qt.view(torch.uint8), q.view(torch.uint8).t()) and torch.equal(st, s.t())


def test_peers_blockwise_dry_run_and_arguments(capsys):
    with pytest.raises(SystemExit):
        peers.parse_args(["--act-shapes", "1000x7168"])
    assert "not multiples of 128" in capsys.readouterr().err
    assert peers.main(["--dry-run", "--ops", "blockwise"]) == 0
    out = capsys.readouterr().out
    for op in bc.OPS:
        assert any(line.startswith(f"blockwise {op} ") and line.rstrip().endswith("yes") for line in out.splitlines()), out
    assert "skip: triton_fp8_blockwise_act_quant_lhs: a GPU kernel" in out


@pytest.mark.gpu
@pytest.mark.parametrize("op", bc.OPS)
@pytest.mark.parametrize("m, k", SHAPES + [(1024, 7168)])
def test_mxjit_equals_torchao_triton_kernels_on_gpu(op, m, k):
    x = spread(m, k, seed=m + k, device="cuda")
    mine = bc.mxjit_op(op)(x)
    theirs = bc.torchao_op(op)(x)
    d = bu.byte_diff(list(mine), list(theirs))
    assert d.equal, f"{op} {m}x{k}: {d}"
    assert tuple(layout_of(t) for t in mine) == tuple(layout_of(t) for t in theirs) == bc.triton_layout(op, m, k)
    # and the CPU backend's bytes
    assert bu.byte_diff(list(bc.mxjit_op(op)(x.cpu())), list(mine)).equal


def _zero_groups(x):
    x[:128, 128:256] = 0  # a zero tile
    x[130, :128] = 0


def _under_floor(x):
    x[131, :128] = 1e-13
    x[200:328, 300] = 1e-13  # a 128x1 group under the floor


def _nan(x):
    x[132, 5] = float("nan")


def _inf(x):
    x[133, 200] = float("inf")
    x[300, 384] = float("-inf")


def _bf16_max(x):
    x[134, 256:384] = torch.finfo(torch.bfloat16).max


SPECIALS = {"zero groups": _zero_groups, "under the floor": _under_floor, "nan": _nan, "inf": _inf,
            "bf16 max": _bf16_max}


@pytest.mark.gpu
@pytest.mark.parametrize("op", bc.OPS)
@pytest.mark.parametrize("special", list(SPECIALS))
def test_special_groups_equal_torchao_triton_kernels_on_gpu(op, special):
    """All-zero groups and a zero tile, amax under the 1e-12 floor, NaN, +-Inf, bf16 max, each on its own: the
    Triton kernels' amax drops NaN (tl.max), the floor is fp32(1e-12) (tl.clamp in fp32), NaN codes clamp to +448
    (tl.clamp: fmaxf(fminf(v, 448), -448), measured on an H100), an infinite amax gives q = 0 (codes 0, Inf * 0 =
    NaN -> +448) and stored scale Inf; mxjit's recipe (Clamp.ignore_nan_hi) says the same."""
    x = spread(512, 640, seed=11)
    SPECIALS[special](x)
    x = x.cuda()
    mine, theirs = bc.mxjit_op(op)(x), bc.torchao_op(op)(x)
    d = bu.byte_diff(list(mine), list(theirs))
    assert d.equal, f"{op}, {special}: {d}; " + "; ".join(_first_difference(a, b) for a, b in zip(mine, theirs))


def _first_difference(a, b):
    """Where two outputs first differ, as 'index: mine vs theirs' (bytes of codes, values of scales)."""
    u, v = (a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)) if a.element_size() == 1 else (a, b)
    ne = (u != v) & ~(torch.isnan(u.float()) & torch.isnan(v.float())) if a.element_size() != 1 else u != v
    idx = ne.nonzero()
    if idx.numel() == 0:
        return "equal"
    i = tuple(idx[0].tolist())
    return f"{int(ne.sum())} differ, first at {i}: {u[i].item()} vs {v[i].item()}"
