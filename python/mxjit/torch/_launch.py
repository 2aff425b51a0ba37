"""The one implementation every mxjit torch op shares: allocate the outputs its spec describes,
then run the kernel on torch's current stream of the input's device (or on the CPU).

A spec (``Spec``) is what an op's spec function returns for its arguments; the fake (meta) kernel
allocates the same ``Out`` shapes, strides and dtypes without running anything, so eager, fake and
compiled outputs agree by construction.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import torch

import mxjit

from . import _geometry
from ._dtypes import output_torch_dtype

try:
    _raw_stream = torch._C._cuda_getCurrentRawStream  # 0.1 us; what Inductor's generated code uses
except AttributeError:  # pragma: no cover - builds of torch without CUDA
    def _raw_stream(index: int) -> int:
        return torch.cuda.current_stream(index).cuda_stream


class Out(NamedTuple):
    """One output of an op: the torch tensor it returns (shape, strides, dtype) and the view the
    kernel writes through (``slot``: the pipeline output, or None for an output no kernel writes)."""

    shape: tuple
    strides: tuple
    dtype: torch.dtype
    slot: Optional[int] = None
    view_shape: tuple = ()
    view_strides: tuple = ()


class Spec(NamedTuple):
    """What one call of an op does: the cast (None: no kernel), its inputs in pipeline order and
    every output it allocates. ``finish(outs, inputs)``, when set, turns the allocated outputs into the
    returned ones in the real implementation (extra torch work, e.g. a replication; it must not hold
    tensors: specs are memoized); ``returned`` then names the allocated outputs that are returned (what
    the fake kernel returns)."""

    cast: Optional["Cast"]
    inputs: tuple
    outs: tuple
    domain_numel: object = 1
    finish: Optional[Callable] = None
    returned: Optional[tuple] = None


class Cast:
    """A pipeline, its kernel (compiled per GPU architecture on first launch) and output info."""

    __slots__ = ("pipeline", "kernel", "info", "inputs", "workspace", "fp4x2")

    def __init__(self, pipeline: mxjit.Pipeline, fp4x2: bool = False):
        self.pipeline = pipeline
        self.kernel = mxjit.jit(pipeline)
        self.info = pipeline.output_info()
        self.inputs = pipeline.input_info()
        self.workspace = self.kernel.workspace_bytes
        self.fp4x2 = fp4x2

    def out(self, slot: int, domain, groups=0, present=None) -> Out:
        """The Out of pipeline output `slot` for `domain`, presented as `present` (see present())."""
        info = self.info[slot]
        view_shape, view_strides = _geometry.output_geometry(info, domain, groups)
        shape, strides = present_view(view_shape, view_strides, present)
        return Out(tuple(shape), tuple(strides), output_torch_dtype(info, self.fp4x2), slot, tuple(view_shape),
                   tuple(view_strides))


_casts: dict = {}


def cast_for(key, build: Callable[[], mxjit.Pipeline], fp4x2: bool = False) -> Cast:
    """The Cast cached under `key` (hashable op arguments), built by `build()` on first use."""
    c = _casts.get(key)
    if c is None:
        c = _casts[key] = Cast(build(), fp4x2)
    return c


def contiguous_strides(shape: Sequence) -> list:
    strides = [1] * len(shape)
    acc = 1
    for a in range(len(shape) - 1, -1, -1):
        strides[a] = acc
        acc = acc * shape[a]
    return strides


def present_view(view_shape, view_strides, present):
    """The torch (shape, strides) of a kernel view: as is (None), axes permuted (``("perm", p)``), or
    the compact storage reshaped (``("shape", s)``: s has the view's element count)."""
    if present is None:
        return list(view_shape), list(view_strides)
    how, arg = present
    if how == "perm":
        return [view_shape[a] for a in arg], [view_strides[a] for a in arg]
    return list(arg), contiguous_strides(arg)


def allocate(spec: Spec, device: torch.device) -> list:
    return [torch.empty_strided(o.shape, o.strides, dtype=o.dtype, device=device) for o in spec.outs]


def fake(spec_fn: Callable, returns_list: bool = False) -> Callable:
    """The fake (meta) kernel of an op: its spec's outputs, nothing run."""

    def impl(*args):
        spec = spec_fn(*args)
        outs = allocate(spec, _device_of(args))
        if spec.returned is not None:
            outs = [outs[i] for i in spec.returned]
        return outs if returns_list else _pack(outs)

    return impl


class _Plan(NamedTuple):
    """A memoized spec without tensors: where its inputs are in the op's arguments, the launch order
    of the written outputs and their views (see real())."""

    spec: Spec
    positions: tuple  # per input: (argument index, index in a list argument or -1)
    written: tuple    # indices into spec.outs with a slot, in slot order
    view_shapes: list
    view_strides: list
    device: torch.device
    cuda_index: int   # -1 on the CPU


_MEMO_LIMIT = 4096  # distinct (op arguments, shapes) kept per op before the memo starts over


def _meta(a):
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.device, a.shape)
    if isinstance(a, list):
        return tuple(_meta(t) for t in a)
    return a


def _positions(inputs, args) -> tuple:
    out = []
    for t in inputs:
        for i, a in enumerate(args):
            if a is t:
                out.append((i, -1))
                break
            if isinstance(a, list) and any(u is t for u in a):
                out.append((i, next(j for j, u in enumerate(a) if u is t)))
                break
        else:
            raise AssertionError("mxjit: a spec input is not one of the op's arguments")
    return tuple(out)


def real(spec_fn: Callable, returns_list: bool = False) -> Callable:
    """The CUDA and CPU kernel of an op: its spec's outputs, written by the kernel.

    Specs depend only on the arguments' dtypes, devices, shapes and non-tensor values, so each
    distinct combination is computed (and checked) once and kept without its tensors.
    """
    memo: dict = {}

    def impl(*args):
        key = tuple([_meta(a) for a in args])
        plan = memo.get(key)
        if plan is None:
            spec = spec_fn(*args)
            written = tuple(sorted((i for i, o in enumerate(spec.outs) if o.slot is not None),
                                   key=lambda i: spec.outs[i].slot))
            device = _device_of(args)
            if device.type == "cuda":
                index = device.index if device.index is not None else torch.cuda.current_device()
            elif device.type == "cpu":
                index = -1
            else:
                raise RuntimeError(f"mxjit: tensors on {device} are not supported (CUDA or CPU)")
            plan = _Plan(spec._replace(inputs=()), _positions(spec.inputs, args), written,
                         [spec.outs[i].view_shape for i in written], [spec.outs[i].view_strides for i in written],
                         device, index)
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            memo[key] = plan
        spec = plan.spec
        inputs = [args[i] if j < 0 else args[i][j] for i, j in plan.positions]
        outs = allocate(spec, plan.device)
        if spec.cast is not None:
            run(plan, inputs, outs)
        if spec.finish is not None:
            outs = spec.finish(outs, inputs)
        return outs if returns_list else _pack(outs)

    return impl


def run(plan: _Plan, ins: list, outs: list) -> None:
    """Runs the plan's cast on `ins` into the outputs that have a slot (in slot order)."""
    spec = plan.spec
    cast = spec.cast
    written = [outs[i] for i in plan.written]
    if spec.domain_numel == 0:  # nothing to cast: padding and scales of no element are zero
        for t in written:
            t.zero_()
        return
    ptrs = [t.data_ptr() for t in ins]
    ptrs += [t.data_ptr() for t in written]
    shapes = [t.shape for t in ins]
    shapes += plan.view_shapes
    strides = [t.stride() for t in ins]
    for i, st in enumerate(strides):
        if 0 in st:  # an axis of extent 1 with stride 0: never stepped along (longer ones are refused)
            strides[i] = tuple(1 if d == 0 and n == 1 else d for d, n in zip(st, ins[i].shape))
    strides += plan.view_strides
    index = plan.cuda_index
    if index >= 0:
        if cast.workspace:
            ws = torch.empty(16, dtype=torch.uint8, device=plan.device)  # torch's (graph-aware) allocator
            cast.kernel.launch(_raw_stream(index), index, ptrs, shapes, strides, ws.data_ptr())
        else:
            cast.kernel.launch(_raw_stream(index), index, ptrs, shapes, strides)
    else:
        cast.kernel.run_host(ptrs, shapes, strides)


def _device_of(args) -> torch.device:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            return a[0].device
    raise ValueError("mxjit: an op needs at least one tensor argument")


def _pack(outs: list):
    return outs[0] if len(outs) == 1 else tuple(outs)
