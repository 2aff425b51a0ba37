"""mxjit.torch._geometry (the Python transcription used by the fake kernels) equals the C++
output_geometry for every output kind and layout, over shapes with tails."""

import itertools

import pytest

import mxjit as mx

torch = pytest.importorskip("torch")
from mxjit.torch import _geometry as geo  # noqa: E402


def pipelines():
    x2 = mx.input("x", mx.bf16, 2)
    x3 = mx.input("x", mx.f32, 3)
    out = []
    for axis, (ql, sl) in itertools.product((0, 1), [
            (mx.layout.row_major(), mx.layout.linear()), (mx.layout.col_major(), mx.layout.blocked_128x4()),
            (mx.layout.row_major(), mx.layout.blocked_8x4()), (mx.layout.col_major(), mx.layout.col_major())]):
        s = mx.e8m0_scale(mx.amax(mx.blocks(x2, axis, 32)), mx.e4m3, mx.ScaleRule.rceil)
        out.append(mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x2 / s), ql), mx.output("s", s, sl)]))
    s = mx.e8m0_scale(mx.amax(mx.blocks(x2, 1, 32)), mx.e2m1, mx.ScaleRule.floor)
    out.append(mx.pipeline([mx.output("q", mx.cast(mx.e2m1, x2 / s)), mx.output("s", s, mx.layout.blocked_128x4()),
                            mx.output("amax", mx.amax(x2)), mx.output("y", x2 * 2.0, mx.f16, mx.layout.col_major())]))
    s = mx.e8m0_scale(mx.amax(mx.blocks(x2, 0, 32)), mx.e2m1, mx.ScaleRule.floor)
    out.append(mx.pipeline([mx.output("q", mx.cast(mx.e2m1, x2 / s), mx.layout.col_major()), mx.output("s", s)]))
    for axis in (1, 2):
        s = mx.e8m0_scale(mx.amax(mx.blocks(x3, axis, 16)), mx.e5m2, mx.ScaleRule.even)
        out.append(mx.pipeline([mx.output("q", mx.cast(mx.e5m2, x3 / s), mx.layout.expert_col_major()),
                                mx.output("s", s, mx.layout.blocked_128x4())]))
    s = mx.e8m0_scale(mx.amax(mx.blocks(x3, (1, 2), (32, 32))), mx.e4m3, mx.ScaleRule.rceil)
    out.append(mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x3 / s), mx.layout.permuted([2, 0, 1])),
                            mx.output("s", s)]))
    for gaxis in (0, 1):
        s = mx.f32_scale(mx.amax(mx.groups(x2, gaxis, mx.offsets("offs"))), mx.e4m3, store_multiplier=True)
        out.append(mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x2 / s)), mx.output("s", s, mx.layout.col_major())]))
    for axis in (0, 1):
        s = mx.e8m0_scale(mx.amax(mx.blocks(x2, axis, 32)), mx.e4m3, mx.ScaleRule.rceil)
        out.append(mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x2 / s)),
                                mx.output("s", s, mx.layout.grouped_blocked_128x4(mx.offsets("offs"), 0))]))
    # Composable layouts: padded, packed, 2-D tiles, a general form with split axes (1-D view).
    L = mx.layout
    for axis in (0, 1):
        s = mx.e8m0_scale(mx.amax(mx.blocks(x2, axis, 32)), mx.e4m3, mx.ScaleRule.rceil)
        f = mx.f32_scale(mx.amax(mx.blocks(x2, axis, 32)), mx.e4m3)
        out.append(mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x2 / s)), mx.output("s", s, L.mn_major_tma_packed()),
                                mx.output("s1", f, L.mn_major_tma()),
                                mx.output("s2", s, L.modes([L.rest, L.rows / 16, L.cols, L.rows % 16]))]))
    for axis in (1, 2):
        s = mx.e8m0_scale(mx.amax(mx.blocks(x3, axis, 16)), mx.e5m2, mx.ScaleRule.even)
        out.append(mx.pipeline([mx.output("q", mx.cast(mx.e5m2, x3 / s)), mx.output("s", s, L.mn_major_tma_packed()),
                                mx.output("s1", s, L.mn_major_tma())]))
    t = mx.f32_scale(mx.amax(mx.blocks(x2, (0, 1), (32, 32))), mx.e4m3)
    out.append(mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x2 / t)), mx.output("s", t, L.gemm_ready_2d()),
                            mx.output("s1", t, L.gemm_ready_2d_t())]))
    return out


SHAPES2 = [(1, 2), (32, 64), (33, 66), (130, 250), (257, 4), (0, 8)]
SHAPES3 = [(1, 32, 32), (3, 33, 70), (2, 160, 96)]


@pytest.mark.parametrize("p", pipelines(), ids=lambda p: p.hash[:8])
def test_python_geometry_equals_cxx(p):
    infos = p.output_info()
    shapes = SHAPES2 if p.rank == 2 else SHAPES3
    for shape in shapes:
        for groups in (0, 1, 5):
            if groups == 0 and "offs" in [d.name for d in p.inputs]:
                continue
            for i, info in enumerate(infos):
                try:
                    want = p.output_geometry(i, list(shape), groups)
                except mx.UsageError:
                    with pytest.raises(ValueError):
                        geo.output_geometry(info, shape, groups)
                    continue
                got = geo.output_geometry(info, shape, groups)
                assert (got[0], got[1]) == (want.view_shape, want.view_strides), (info["name"], shape, groups)
