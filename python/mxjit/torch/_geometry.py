"""Output geometry in Python: the view each kernel writes, for int or symbolic (SymInt) shapes.

A transcription of ``output_geometry`` (dsl/geometry.cpp) and ``Layout::storage_size`` /
``Layout::strides`` (dsl/layout.cpp) over the fields ``Pipeline.output_info()`` exposes, so that the
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


def scale_shape(info: dict, shape: Sequence, groups) -> list:
    """Shape of the scale tensor of an output's blocks for a domain `shape` (pipeline.cpp)."""
    s = list(shape)
    for axis, size in zip(info["block_axes"], info["block_sizes"]):
        s[axis] = groups if info["jagged"] else cdiv(shape[axis], size)
    return s


def compact_strides(shape: Sequence, order: Sequence[int]) -> list:
    """Strides (elements) of a permuted layout: `order` lists the axes outermost first."""
    strides = [1] * len(shape)
    acc = 1
    for axis in reversed(order):
        strides[axis] = acc
        acc = acc * shape[axis]
    return strides


def blocked_storage(info: dict, logical: Sequence, groups) -> object:
    """Elements of a blocked (or grouped blocked) scale layout, padding included (layout.cpp)."""
    n = 1
    for a, e in enumerate(logical):
        grouped = a == info["group_axis"]
        if a == info["row_axis"]:
            n = n * (round_up(e, info["atom_rows"]) + (info["atom_rows"] * groups if grouped else 0))
        elif a == info["col_axis"]:
            n = n * (round_up(e, info["atom_cols"]) + (info["atom_cols"] * groups if grouped else 0))
        else:
            n = n * e
    return n


def output_geometry(info: dict, shape: Sequence, groups=0) -> tuple[list, list]:
    """(view_shape, view_strides) of one output (an entry of Pipeline.output_info()) for domain `shape`.

    Raises ValueError for an odd FP4 packed extent (when the extent is a plain int).
    """
    kind = info["kind"]
    if kind == "amax":
        return [1], [1]
    logical = list(shape) if kind in ("elems", "values") else scale_shape(info, shape, groups)
    if info["blocked"]:
        return [blocked_storage(info, logical, groups)], [1]
    view = list(logical)
    if info["packed"]:
        axis = info["order"][-1]
        extent = view[axis]
        if isinstance(extent, int) and extent % 2:
            raise ValueError(
                f"output '{info['name']}': FP4 packs two codes per byte along axis {axis}, whose extent {extent} is odd")
        view[axis] = extent // 2
    return view, compact_strides(view, info["order"])
