"""The CPU-runnable parts of bench/python/peers.py (issue 35): argument parsing, the byte comparison,
the jagged group ends, the tiny-shape dry run of every op against torchao on CPU tensors, and the
FP8-rowwise recipe's casts on mxjit (fp8_casts.py) bit-exact with torchao's torch references."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "python"))

import benchutil as bu  # noqa: E402
import fp8_casts as fc  # noqa: E402
import peers  # noqa: E402


# ---- arguments ----

def test_parse_args_defaults_and_dry_run():
    a = peers.parse_args([])
    assert a.shapes == [(16384, 16384), (16640, 5120), (8192, 5120)]
    assert (16, 8192, 5120) in a.shapes3d and (64, 8192, 5120) in a.shapes3d
    assert a.ops == list(peers.OPS) and not a.no_compile and "blockwise" in a.ops
    assert a.act_shapes == [(16384, 7168), (8192, 5120)] and a.weight_shapes == [(7168, 16384), (5120, 8192)]
    d = peers.parse_args(["--dry-run"])
    assert d.no_compile and max(m * k for m, k in d.shapes) <= 384 * 160
    assert max(m * k for m, k in d.act_shapes + d.weight_shapes) <= 384 * 256
    s = peers.parse_args(["--shapes", "128x64, 32x32", "--shapes3d", "2x64x32", "--ops", "dim0,3d"])
    assert s.shapes == [(128, 64), (32, 32)] and s.shapes3d == [(2, 64, 32)] and s.ops == ["dim0", "3d"]


@pytest.mark.parametrize("text, rank, msg", [("128", 2, "2 positive extents"), ("12xab", 2, "integers"),
                                              ("0x5", 2, "positive"), ("2x3", 3, "3 positive")])
def test_parse_shapes_names_the_bad_item(text, rank, msg):
    with pytest.raises(ValueError, match=msg):
        peers.parse_shapes(text, rank)


def test_parse_args_refuses_unknown_ops_and_bad_groups(capsys):
    with pytest.raises(SystemExit) as e:
        peers.parse_args(["--ops", "dim0,dim9"])
    assert e.value.code == 2 and "dim9" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        peers.parse_args(["--groups", "1"])


# ---- inputs and comparison ----

@pytest.mark.parametrize("total, groups, multiple", [(16640, 16, 16), (16384, 64, 16), (256, 4, 32), (64, 8, 16)])
def test_jagged_offsets(total, groups, multiple):
    ends = peers.jagged_offsets(total, groups, multiple, seed=3)
    sizes = [e - s for s, e in zip([0] + ends[:-1], ends)]
    assert len(ends) == groups and ends[-1] == total
    assert all(s >= 0 and s % multiple == 0 for s in sizes) and sizes[1] == 0
    assert peers.jagged_offsets(total, groups, multiple, seed=3) == ends  # reproducible
    with pytest.raises(ValueError, match="multiple"):
        peers.jagged_offsets(total + 1, groups, multiple)


def test_byte_diff_counts_bytes_in_logical_order():
    x = torch.arange(24, dtype=torch.uint8).reshape(4, 6)
    col = x.t().contiguous().t()  # same values, column-major
    assert bu.byte_diff([x], [col]).equal
    y = x.clone()
    y[1, 2] += 1
    y[3, 5] += 7
    d = bu.byte_diff([x, x], [x, y])
    assert (d.differing, d.total) == (2, 48) and not d.equal
    assert bu.describe(d, "torchao rounds ties up") == "2/48 bytes differ (torchao rounds ties up)"
    assert "UNEXPECTED" in bu.describe(d)
    f = torch.tensor([1.0, 2.0])
    assert bu.byte_diff([f], [torch.tensor([1.0, 2.0000002])]).differing >= 1  # FP32: byte-exact, not close
    m = bu.byte_diff([x], [x[:, :3]])
    assert m.mismatch and not m.equal and bu.describe(m).startswith("NOT COMPARED")
    assert bu.byte_diff([x], [x, x]).mismatch


def test_table_aligns_columns():
    t = bu.table([["dim0", "12.5", "yes"], ["dim1 long", "3.0", ""]], ["op", "us", "agree"])
    lines = t.splitlines()
    assert len(lines) == 4 and len({len(lines[0]), len(lines[1])}) == 1
    assert lines[2].index("12.5") + 4 == lines[3].index("3.0") + 3  # right-aligned numbers


# ---- the dry run: every op against torchao on CPU tensors ----

def test_peers_dry_run_every_cpu_pair_agrees(capsys, tmp_path):
    rc = peers.main(["--dry-run", "--out", str(tmp_path / "peers")])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = [line for line in out.splitlines() if "| yes" in line or line.rstrip().endswith(" yes")]
    ops_agreeing = {r.split("|")[0].strip().split("  ")[0] for r in rows}
    # every op has at least one torchao path on CPU that gives the same bytes
    for op in ("dim0", "dim1", "dim01", "mxfp4 dim0 floor", "mxfp6 e2m3 dim0 floor", "mxfp6 e3m2 dim0 floor",
               "nvfp4 two-level", "blocked 2-D scales", "mgroups dim0 + M-group blocked scales",
               "kgroups dim1 + K-group blocked scales", "fp8_colwise per-group (jagged rows)",
               "fp8_rowwise per-group (jagged cols)", "fp8_row2d whole-row pow2",
               "3d expert weights, blocked scales", "blocked3d per-expert scales", "fp8_col3d B_t colwise pow2",
               "fp8_row3d_t B_t transposed rowwise pow2", "blockwise act_quant_lhs", "blockwise act_quant_rhs",
               "blockwise act_quant_transposed_lhs", "blockwise weight_quant_rhs",
               "blockwise weight_quant_transposed_rhs"):
        assert any(r.startswith(op) for r in rows), f"{op}: no agreeing CPU peer in\n{out}"
    assert "UNEXPECTED" not in out and "NOT COMPARED" not in out and "MXJIT FAILED" not in out
    assert "skip: triton_fp8_per_group_colwise_scales: a GPU kernel" in out  # skipped with one line, with why
    csv_text = (tmp_path / "peers.csv").read_text()
    assert csv_text.startswith("op,shape,mxjit us") and "to_mx rceil (eager)" in csv_text
    assert (tmp_path / "peers.md").read_text().startswith("| op | shape |")


def test_peers_main_needs_a_gpu_without_dry_run(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert peers.main(["--ops", "dim0"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


# ---- the FP8-rowwise recipe on mxjit's casts ----

@pytest.mark.parametrize("e, n, k", [(3, 48, 64), (2, 160, 96), (1, 32, 32)])
def test_fp8_recipe_casts_bit_exact_with_torchao_references(e, n, k):
    g = torch.Generator().manual_seed(e * n + k)
    b_t = torch.randn((e, n, k), generator=g).to(torch.bfloat16).transpose(-2, -1)  # (E, K, N) column-major
    x = torch.randn((96, k), generator=g).to(torch.bfloat16) * 3
    offs = torch.tensor([32, 32, 80, 96], dtype=torch.int32)  # an empty group
    mx, ref = fc.mxjit_casts(), fc.reference_casts()
    for call in (lambda c: c.rowwise_2d(x), lambda c: c.colwise_3d(b_t), lambda c: c.rowwise_3d_transpose(b_t),
                 lambda c: c.per_group_colwise_dual(x, x * 0.5, offs)):
        mine, want = list(call(mx)), list(call(ref))
        assert bu.byte_diff(mine, want).equal
        assert [(t.shape, t.stride(), t.dtype) for t in mine] == [(t.shape, t.stride(), t.dtype) for t in want]
