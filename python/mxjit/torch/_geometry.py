"""Output geometry in Python: the view each kernel writes, for int or symbolic (SymInt) shapes.

A transcription of ``output_geometry`` (dsl/geometry.cpp) and ``BoundLayout``'s sizes and view
(dsl/layout_bound.cpp) over the fields ``Pipeline.output_info()`` exposes, so that the
fake (meta) kernels under ``torch.compile(dynamic=True)`` compute it without calling C++. Only
SymInt-safe arithmetic: ``+ - *``, floor division of non-negative values, no ``int()``/``math.ceil``.
``tests/python/test_geometry.py`` compares it with the C++ function over a sweep of pipelines and shapes.
"""

from __future__ import annotations

from typing import Sequence


def cdiv(a, b):
    """ceil(a / b) for a >= 0, b > 0 (SymInt-safe)."""
    return (a + b - 1) // b


def round_up(a, m):
    """a rounded up to a multiple of m (SymInt-safe)."""
    return cdiv(a, m) * m


WHOLE_AXIS = -1  # a block size meaning the whole axis (mxjit.whole, C++ kWholeAxis)


def at_most_one(n):
    """min(n, 1) for n >= 0: the extent of a whole-axis scale axis (0 for an empty axis)."""
    if isinstance(n, int):
        return min(n, 1)
    import torch  # noqa: PLC0415  (SymInt: only under torch.compile)
    return torch.sym_min(n, 1)


def scale_shape(info: dict, shape: Sequence, groups) -> list:
    """Shape of the scale tensor of an output's blocks for a domain `shape` (pipeline.cpp)."""
    s = list(shape)
    for axis, size in zip(info["block_axes"], info["block_sizes"]):
        s[axis] = groups if info["jagged"] else at_most_one(shape[axis]) if size == WHOLE_AXIS else cdiv(shape[axis], size)
    return s


def compact_strides(shape: Sequence, order: Sequence[int]) -> list:
    """Strides (elements) of a permuted layout: `order` lists the axes outermost first."""
    strides = [1] * len(shape)
    acc = 1
    for axis in reversed(order):
        strides[axis] = acc
        acc = acc * shape[axis]
    return strides


def padded(info: dict, logical: Sequence) -> list:
    """Padded extent of every axis: rounded up to the layout's alignment (layout_bound.cpp)."""
    return [round_up(e, a) for e, a in zip(logical, info["align"])]


def product(values) -> object:
    n = 1
    for v in values:
        n = n * v
    return n


def output_geometry(info: dict, shape: Sequence, groups=0) -> tuple[list, list]:
    """(view_shape, view_strides) of one output (an entry of Pipeline.output_info()) for domain `shape`.

    The storage view in words (BoundLayout::view_shape / view_strides): a strided layout views the
    padded tensor of words (its packed axis divided by the packing) with compact strides; any other
    layout, and a grouped one (its host-side bound), one dimension. Raises ValueError for an odd FP4
    packed extent (when the extent is a plain int).
    """
    kind = info["kind"]
    if kind == "amax":
        return [1], [1]
    logical = list(shape) if kind in ("elems", "values") else scale_shape(info, shape, groups)
    pack = info["pack"]
    view = padded(info, logical)
    ga = info["group_axis"]
    if ga >= 0:
        u = info["align"][ga]
        view[ga] = round_up(logical[ga], u) + u * groups
        return [product(view) // pack], [1]
    if not info["strided"]:
        return [product(view) // pack], [1]
    if info["packed"]:
        axis = info["order"][-1]
        extent = view[axis]
        if isinstance(extent, int) and extent % 2:
            raise ValueError(
                f"output '{info['name']}': FP4 packs two codes per byte along axis {axis}, whose extent {extent} is odd")
        view[axis] = extent // 2
    if pack > 1:
        view[info["modes"][-1][0]] = view[info["modes"][-1][0]] // pack
    return view, compact_strides(view, info["order"])
