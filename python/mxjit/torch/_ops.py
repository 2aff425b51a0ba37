"""The torch ops in namespace ``mxjit``: schemas, one spec function per op, registration.

Every op is functional (new outputs, no aliasing) and registered with ``torch.library.Library``
``define`` + ``impl(..., "CUDA")`` + ``impl(..., "CPU")`` + ``register_fake`` (``@custom_op`` costs
15-20 us more per eager call; research/pytorch_binding.md). The spec function of an op checks its
arguments and describes its outputs (``_launch.Spec``); the fake kernel allocates them, the real one
allocates them and runs the cast, so eager, fake and compiled outputs have one shape, strides and dtype.

Returned dtypes: FP8 codes ``float8_e4m3fn`` / ``float8_e5m2``, MXINT8 ``int8``, FP6 ``uint8`` (one code
per byte), FP4 ``uint8`` two codes per byte (``float4_e2m1fn_x2`` with ``fp4x2=True``); E8M0 scales
``float8_e8m0fnu``, NVFP4 block scales ``float8_e4m3fn``, FP8-recipe scales ``float32``.

Blocked (128x4) scales come back as ``(*batch, roundup(R, 128), roundup(C, 4))`` with R the scale
rows (the innermost non-block axis) and C the scale columns (the block axis), as the GEMMs and
torchao's ``to_blocked`` lay them out.
"""

from __future__ import annotations

import torch

import mxjit

from . import _checks as chk
from . import _geometry as geo
from ._dtypes import ELEM_NAMES, ELEMS, POLICIES, RULES, VALUE_DTYPES
from ._launch import Out, Spec, cast_for, contiguous_strides, fake, real

LIB = torch.library.Library("mxjit", "DEF")
# The kernels are specialised on strides: keep compiled graphs on the strides eager mode sees.
_TAGS = (torch.Tag.needs_exact_strides,)
_DATA_LAYOUTS = {"row_major": mxjit.layout.row_major, "col_major": mxjit.layout.col_major,
                 "expert_col_major": mxjit.layout.expert_col_major}
_SCALE_LAYOUTS = ("linear", "blocked")


def _register(name: str, schema: str, spec_fn, returns_list: bool = False) -> None:
    LIB.define(name + schema, tags=_TAGS)
    impl = real(spec_fn, returns_list)
    LIB.impl(name, impl, "CUDA")
    LIB.impl(name, impl, "CPU")
    torch.library.register_fake("mxjit::" + name, fake(spec_fn, returns_list), lib=LIB)


# ---- shared pieces of the specs ----
# Spec functions repeat the schema's defaults: the dispatcher drops trailing arguments equal to them.

def _blocked_present(cast, slot: int, domain, groups=0):
    """("shape", (*batch, Rp, Cp)) for a blocked scale output (grouped: the rows or columns bound)."""
    info = cast.info[slot]
    logical = geo.scale_shape(info, domain, groups)
    row, col = info["row_axis"], info["col_axis"]
    padded = geo.padded(info, logical)
    rp = padded[row] + (info["align"][row] * groups if info["group_axis"] == row else 0)
    cp = padded[col] + (info["align"][col] * groups if info["group_axis"] == col else 0)
    batch = [logical[a] for a in range(len(logical)) if a not in (row, col)]
    return ("shape", tuple(batch) + (rp, cp))


def _mx_scale(x, axis_or_axes, size_or_sizes, elem, rule, policy):
    blk = mxjit.blocks(x, axis_or_axes, size_or_sizes)
    return mxjit.e8m0_scale(mxjit.amax(blk), ELEMS[elem], RULES[rule], POLICIES[policy])


def _check_mx(op, elem, block_size, scaling_mode, nan_policy="nan_block"):
    chk.choice(op, "elem", elem, tuple(ELEMS))
    chk.positive_pow2(op, "block_size", block_size)
    chk.choice(op, "scaling_mode", scaling_mode, tuple(RULES))
    chk.choice(op, "nan_policy", nan_policy, tuple(POLICIES))


def _numel(shape):
    n = 1
    for e in shape:
        n = n * e
    return n


# ---- quantize: any MX cast along one axis ----

def _quantize_spec(x, elem="e4m3", block_size=32, axis=-1, scaling_mode="rceil", data_layout="row_major",
                   scale_layout="linear", nan_policy="nan_block", fp4x2=False, op="mxjit.quantize"):
    chk.values(op, "x", x)
    _check_mx(op, elem, block_size, scaling_mode, nan_policy)
    chk.choice(op, "data_layout", data_layout, tuple(_DATA_LAYOUTS))
    chk.choice(op, "scale_layout", scale_layout, _SCALE_LAYOUTS)
    rank = x.dim()
    if rank < 1:
        raise ValueError(f"{op}: x must have at least one dimension")
    ax = chk.axis(op, "axis", axis, rank)
    key = ("quantize", x.dtype, rank, elem, block_size, ax, scaling_mode, data_layout, scale_layout, nan_policy, fp4x2)

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], rank)
        s = _mx_scale(v, ax, block_size, elem, scaling_mode, nan_policy)
        sl = mxjit.layout.blocked_128x4() if scale_layout == "blocked" else mxjit.layout.linear()
        return mxjit.pipeline([mxjit.output("q", mxjit.cast(ELEMS[elem], v / s), _DATA_LAYOUTS[data_layout]()),
                               mxjit.output("s", s, sl)])

    c = cast_for(key, build, fp4x2)
    dom = tuple(x.shape)
    s_present = _blocked_present(c, 1, dom) if scale_layout == "blocked" else None
    return Spec(c, (x,), (c.out(0, dom), c.out(1, dom, present=s_present)), _numel(dom))


def quantize_spec(x, elem="e4m3", block_size=32, axis=-1, scaling_mode="rceil", data_layout="row_major",
                  scale_layout="linear", nan_policy="nan_block", fp4x2=False):
    return _quantize_spec(x, elem, block_size, axis, scaling_mode, data_layout, scale_layout, nan_policy, fp4x2)


def to_mxfp8_dim0_spec(x, inner_block_size=32, scaling_mode="rceil"):
    return _quantize_spec(x, "e4m3", inner_block_size, -1, scaling_mode, op="mxjit.to_mxfp8_dim0")


# ---- dim1: 2-D, blocks along dim 0, codes column-major, scales (K, M/bs) ----

def to_mxfp8_dim1_spec(x, inner_block_size=32, scaling_mode="rceil", scale_layout="linear"):
    op = "mxjit.to_mxfp8_dim1"
    chk.values(op, "x", x, ranks=(2,))
    _check_mx(op, "e4m3", inner_block_size, scaling_mode)
    chk.choice(op, "scale_layout", scale_layout, _SCALE_LAYOUTS)
    key = ("dim1", x.dtype, inner_block_size, scaling_mode, scale_layout)

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], 2)
        s = _mx_scale(v, 0, inner_block_size, "e4m3", scaling_mode, "nan_block")
        # (M/bs, K) scales stored column-major are torchao's (K, M/bs) row-major.
        sl = mxjit.layout.blocked_128x4() if scale_layout == "blocked" else mxjit.layout.col_major()
        return mxjit.pipeline([mxjit.output("q", mxjit.cast(mxjit.e4m3, v / s), mxjit.layout.col_major()),
                               mxjit.output("s", s, sl)])

    c = cast_for(key, build)
    dom = tuple(x.shape)
    s_present = _blocked_present(c, 1, dom) if scale_layout == "blocked" else ("perm", (1, 0))
    return Spec(c, (x,), (c.out(0, dom), c.out(1, dom, present=s_present)), _numel(dom))


# ---- dim0 and dim1 from one read (torchao's mxfp8_quantize contract) ----

def mxfp8_quantize_spec(x, rowwise=False, colwise=True, scaling_mode="rceil", block_size=32, scale_layout="linear"):
    op = "mxjit.mxfp8_quantize"
    chk.values(op, "x", x, ranks=(2,))
    _check_mx(op, "e4m3", block_size, scaling_mode)
    chk.choice(op, "scale_layout", scale_layout, _SCALE_LAYOUTS)
    blocked = scale_layout == "blocked"
    key = ("dim01", x.dtype, bool(rowwise), bool(colwise), block_size, scaling_mode, scale_layout)

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], 2)
        sl = mxjit.layout.blocked_128x4() if blocked else mxjit.layout.linear()
        outs = []
        if rowwise:
            s0 = _mx_scale(v, 1, block_size, "e4m3", scaling_mode, "nan_block")
            outs += [mxjit.output("q0", mxjit.cast(mxjit.e4m3, v / s0)), mxjit.output("s0", s0, sl)]
        if colwise:
            s1 = _mx_scale(v, 0, block_size, "e4m3", scaling_mode, "nan_block")
            outs += [mxjit.output("q1", mxjit.cast(mxjit.e4m3, v / s1), mxjit.layout.col_major()),
                     mxjit.output("s1", s1, sl)]
        return mxjit.pipeline(outs)

    dom = tuple(x.shape)
    rows, cols = dom
    empty8 = Out((0,), (1,), torch.float8_e4m3fn)
    empty_s = Out((0,), (1,), torch.float8_e8m0fnu)
    if not rowwise and not colwise:
        return Spec(None, (x,), (empty8, empty8, empty_s, empty_s), 0)
    c = cast_for(key, build)
    outs = [empty8, empty8, empty_s, empty_s]
    slot = 0
    if rowwise:
        sp = _blocked_present(c, 1, dom) if blocked else ("shape", (rows, geo.cdiv(cols, block_size), 1))
        outs[0], outs[2] = c.out(0, dom), c.out(1, dom, present=sp)
        slot = 2
    if colwise:
        # (M/bs, K) row-major scales are torchao's (K, M/bs) with strides (1, K).
        sp = _blocked_present(c, slot + 1, dom) if blocked else ("perm", (1, 0))
        outs[1], outs[3] = c.out(slot, dom), c.out(slot + 1, dom, present=sp)
    return Spec(c, (x,), tuple(outs), _numel(dom))


# ---- 3-D expert weights (E, N, K): blocks along N, codes per-expert column-major ----

def mxfp8_quantize_3d_spec(x, block_size=32, scale_block_dim1=32, scale_block_dim2=1, scaling_mode="rceil",
                           blocked_scale_output=True):
    op = "mxjit.mxfp8_quantize_3d"
    chk.values(op, "x", x, ranks=(3,))
    _check_mx(op, "e4m3", block_size, scaling_mode)
    if scale_block_dim1 != block_size or scale_block_dim2 not in (1, block_size):
        raise ValueError(f"{op}: (scale_block_dim1, scale_block_dim2)=({scale_block_dim1}, {scale_block_dim2}) must be "
                         f"({block_size}, 1) or ({block_size}, {block_size})")
    two_d = scale_block_dim2 != 1
    e, n, k = x.shape
    if two_d and blocked_scale_output and k % block_size:
        raise ValueError(f"{op}: blocked 32x32 scales repeat each scale over {block_size} rows of K; K={k} must be a "
                         f"multiple of {block_size}")
    key = ("3d", x.dtype, block_size, two_d, scaling_mode, bool(blocked_scale_output))

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], 3)
        s = (_mx_scale(v, (1, 2), (block_size, block_size), "e4m3", scaling_mode, "nan_block") if two_d
             else _mx_scale(v, 1, block_size, "e4m3", scaling_mode, "nan_block"))
        sl = mxjit.layout.blocked_128x4() if blocked_scale_output and not two_d else mxjit.layout.linear()
        return mxjit.pipeline([mxjit.output("q", mxjit.cast(mxjit.e4m3, v / s), mxjit.layout.expert_col_major()),
                               mxjit.output("s", s, sl)])

    c = cast_for(key, build)
    dom = (e, n, k)
    q = c.out(0, dom)
    if not blocked_scale_output:
        return Spec(c, (x,), (q, c.out(1, dom)), _numel(dom))
    rp, cp = geo.round_up(k, 128), geo.round_up(geo.cdiv(n, block_size), 4)
    final = Out((e, rp * cp), (rp * cp, 1), torch.float8_e8m0fnu)
    if not two_d:
        return Spec(c, (x,), (q, c.out(1, dom, present=("shape", (e, rp * cp)))), _numel(dom))
    # 32x32 blocks, blocked: torchao repeats each scale over its 32 rows of K, then blocks per expert.
    linear = c.out(1, dom)

    def finish(outs, inputs):
        qt, out, lin = outs
        rows = lin.transpose(1, 2).repeat_interleave(block_size, dim=1)  # (E, K, N/bs)
        out.copy_(mx_block_rearrange(rows).view(e, rp * cp))
        return [qt, out]

    return Spec(c, (x,), (q, final, linear), _numel(dom), finish, returned=(0, 1))


# ---- casts that write grouped (per-group 128x4) scales straight from the cast ----

def quantize_grouped_spec(x, offsets, elem="e4m3", block_size=32, axis=1, scaling_mode="rceil"):
    op = "mxjit.quantize_grouped"
    chk.values(op, "x", x, ranks=(2,))
    chk.offsets(op, "offsets", offsets, x)
    _check_mx(op, elem, block_size, scaling_mode)
    chk.choice(op, "axis", axis, (0, 1))
    key = ("grouped", x.dtype, elem, block_size, axis, scaling_mode)

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], 2)
        s = _mx_scale(v, axis, block_size, elem, scaling_mode, "nan_block")
        ql = mxjit.layout.row_major() if axis == 1 else mxjit.layout.col_major()
        sl = mxjit.layout.grouped_blocked_128x4(mxjit.offsets("offs"), 0)  # groups of rows (tokens)
        return mxjit.pipeline([mxjit.output("q", mxjit.cast(ELEMS[elem], v / s), ql), mxjit.output("s", s, sl)])

    c = cast_for(key, build)
    dom = tuple(x.shape)
    g = offsets.shape[0]
    inputs = _in_order(c, {"x": x, "offs": offsets})
    return Spec(c, inputs, (c.out(0, dom, g), c.out(1, dom, g, _blocked_present(c, 1, dom, g))), _numel(dom))


def _in_order(c, by_name: dict) -> tuple:
    return tuple(by_name[d["name"]] for d in c.inputs)


# ---- FP8 with per-group FP32 scales (torchao's jagged FP8 rowwise recipes) ----

_FP8 = {torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2"}


def _per_group_spec(x, offsets, output_dtype, round_scales_to_power_of_2, colwise: bool):
    op = "mxjit.fp8_per_group_" + ("colwise" if colwise else "rowwise") + "_scales"
    chk.values(op, "x", x, ranks=(2,))
    chk.offsets(op, "offsets", offsets, x)
    output_dtype = torch.float8_e4m3fn if output_dtype is None else output_dtype
    if output_dtype not in _FP8:
        raise ValueError(f"{op}: output_dtype={output_dtype} must be torch.float8_e4m3fn or torch.float8_e5m2")
    elem = _FP8[output_dtype]
    pow2 = bool(round_scales_to_power_of_2)
    key = ("pergroup", colwise, x.dtype, elem, pow2)

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], 2)
        gax = 0 if colwise else 1
        s = mxjit.f32_scale(mxjit.amax(mxjit.groups(v, gax, mxjit.offsets("offs"))), ELEMS[elem],
                            store_multiplier=True, pow2=pow2)
        ql = mxjit.layout.col_major() if colwise else mxjit.layout.row_major()
        # Scales group-major: (G, N) row-major, or (M, G) column-major (= (G, M) row-major).
        sl = mxjit.layout.linear() if colwise else mxjit.layout.col_major()
        return mxjit.pipeline([mxjit.output("q", mxjit.cast(ELEMS[elem], v / s), ql), mxjit.output("s", s, sl)])

    c = cast_for(key, build)
    dom = tuple(x.shape)
    g = offsets.shape[0]
    n = dom[1] if colwise else dom[0]
    return Spec(c, _in_order(c, {"x": x, "offs": offsets}),
                (c.out(0, dom, g), c.out(1, dom, g, ("shape", (n * g,)))), _numel(dom))


def fp8_per_group_colwise_scales_spec(x, offsets, output_dtype=None, round_scales_to_power_of_2=False):
    return _per_group_spec(x, offsets, output_dtype, round_scales_to_power_of_2, True)


def fp8_per_group_rowwise_scales_spec(x, offsets, output_dtype=None, round_scales_to_power_of_2=False):
    return _per_group_spec(x, offsets, output_dtype, round_scales_to_power_of_2, False)


# ---- NVFP4: 16-element blocks along the last axis, E4M3 block scales, FP32 tensor amax ----

def nvfp4_quantize_spec(x, convention="torchao", scale_layout="linear", fp4x2=False):
    op = "mxjit.nvfp4_quantize"
    chk.values(op, "x", x)
    chk.choice(op, "convention", convention, ("te", "torchao"))
    chk.choice(op, "scale_layout", scale_layout, _SCALE_LAYOUTS)
    rank = x.dim()
    if rank < 1:
        raise ValueError(f"{op}: x must have at least one dimension")
    key = ("nvfp4", x.dtype, rank, convention, scale_layout, fp4x2)

    def build():
        v = mxjit.input("x", VALUE_DTYPES[x.dtype], rank)
        conv = mxjit.Nvfp4Convention.te if convention == "te" else mxjit.Nvfp4Convention.torchao
        s = mxjit.nvfp4_scale(mxjit.amax(mxjit.blocks(v, rank - 1, 16)), conv)
        sl = mxjit.layout.blocked_128x4() if scale_layout == "blocked" else mxjit.layout.linear()
        return mxjit.pipeline([mxjit.output("q", mxjit.cast(mxjit.e2m1, v / s)), mxjit.output("s", s, sl),
                               mxjit.output("amax", mxjit.amax(v))])

    c = cast_for(key, build, fp4x2)
    dom = tuple(x.shape)
    if dom[-1] % 2:
        raise ValueError(f"{op}: the last extent {dom[-1]} must be even (two FP4 codes per byte)")
    sp = _blocked_present(c, 1, dom) if scale_layout == "blocked" else None
    return Spec(c, (x,), (c.out(0, dom), c.out(1, dom, present=sp), c.out(2, dom)), _numel(dom))


# ---- dequantize: codes and scales back to values ----

_OUT_DTYPES = {torch.bfloat16: mxjit.bf16, torch.float16: mxjit.f16, torch.float32: mxjit.f32}


def dequantize_spec(data, scale, elem="e4m3", block_size=32, axis=-1, out_dtype=None):
    op = "mxjit.dequantize"
    chk.byte_tensor(op, "data", data)
    chk.tensor(op, "scale", scale)
    chk.same_device(op, "scale", scale, data, "data")
    chk.choice(op, "elem", elem, tuple(ELEMS))
    chk.positive_pow2(op, "block_size", block_size)
    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    if out_dtype not in _OUT_DTYPES:
        raise ValueError(f"{op}: out_dtype={out_dtype} must be torch.bfloat16, torch.float16 or torch.float32")
    if scale.dtype in (torch.uint8, torch.float8_e8m0fnu):
        fmt = mxjit.ScaleFormat.e8m0
    elif scale.dtype == torch.float8_e4m3fn:
        fmt = mxjit.ScaleFormat.e4m3
    elif scale.dtype == torch.float32:
        fmt = mxjit.ScaleFormat.f32
    else:
        raise TypeError(f"{op}: scale has dtype {scale.dtype}; expected float8_e8m0fnu (or uint8), float8_e4m3fn "
                        "or float32")
    rank = data.dim()
    if rank < 1 or scale.dim() != rank:
        raise ValueError(f"{op}: data and scale must have the same rank (>= 1), got {rank} and {scale.dim()}")
    ax = chk.axis(op, "axis", axis, rank)
    packed = elem == "e2m1"
    dom = tuple(data.shape[a] * 2 if packed and a == ax else data.shape[a] for a in range(rank))
    want = tuple(geo.cdiv(dom[a], block_size) if a == ax else dom[a] for a in range(rank))
    if tuple(scale.shape) != want:
        raise ValueError(f"{op}: scale has shape {tuple(scale.shape)}; for data of shape {tuple(data.shape)} "
                         f"({elem}, blocks of {block_size} along axis {ax}) it must be {want}")
    key = ("dequant", rank, elem, block_size, ax, str(fmt), out_dtype)

    def build():
        v = mxjit.dequantize("codes", "scales", ELEMS[elem], fmt, rank, ax, block_size)
        return mxjit.pipeline([mxjit.output("y", v, _OUT_DTYPES[out_dtype])])

    c = cast_for(key, build)
    return Spec(c, (data, scale), (c.out(0, dom),), _numel(dom))


# ---- standalone swizzle of existing scales into 128x4 blocks ----

def mx_block_rearrange_spec(scales):
    op = "mxjit.mx_block_rearrange"
    chk.byte_tensor(op, "scales", scales)
    if scales.dim() < 2:
        raise ValueError(f"{op}: scales must be at least 2-D ([..., R, C]), got shape {tuple(scales.shape)}")
    *batch, r, c = scales.shape
    shape = tuple(batch) + (geo.round_up(r, 128), geo.round_up(c, 4))
    out = Out(shape, tuple(contiguous_strides(shape)), scales.dtype)

    def finish(outs, inputs):
        (o,) = outs
        if o.numel():
            _swizzle(inputs[0], o)
        return [o]

    return Spec(None, (scales,), (out,), 1, finish)


def _swizzle(scales: torch.Tensor, out: torch.Tensor) -> None:
    from ._launch import _raw_stream  # noqa: PLC0415

    if scales.numel() == 0:
        out.zero_()
        return
    if out.device.type == "cuda":
        index = out.device.index
        mxjit.swizzle_scales(index, _raw_stream(index), scales.data_ptr(), list(scales.shape), list(scales.stride()),
                             out.data_ptr())
    else:
        mxjit.swizzle_scales(-1, 0, scales.data_ptr(), list(scales.shape), list(scales.stride()), out.data_ptr())


def mx_block_rearrange(scales: torch.Tensor) -> torch.Tensor:
    return torch.ops.mxjit.mx_block_rearrange.default(scales)


# ---- the generic op: any pipeline on torch tensors ----

_registered: dict = {}
_names: dict = {}  # pipeline hash -> its name: printing the text form costs ~35 us a call, the hash ~0.2


def register_pipeline(p: mxjit.Pipeline) -> str:
    """The name `run` knows `p` by: its text form when it has one, else "hash:<hex>" (registered here)."""
    h = p.hash
    text = _names.get(h)
    if text is not None:
        return text
    try:
        text = p.to_text()
    except mxjit.UsageError:
        text = "hash:" + h
        _registered[text] = p
    _names[h] = text
    return text


def _pipeline_named(op: str, name: str) -> mxjit.Pipeline:
    if name.startswith("hash:"):
        p = _registered.get(name)
        if p is None:
            raise ValueError(f"{op}: pipeline {name!r} is not registered in this process (mxjit.torch.register_pipeline)")
        return p
    return mxjit.parse_pipeline(name)


def run_spec(pipeline, inputs, fp4x2=False):
    op = "mxjit.run"
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{op}: inputs must be a list of tensors")
    c = cast_for(("run", pipeline, fp4x2), lambda: _pipeline_named(op, pipeline), fp4x2)
    decls = c.inputs
    names = [d["name"] for d in decls]
    if len(inputs) != len(decls):
        raise ValueError(f"{op}: the pipeline takes {len(decls)} inputs ({', '.join(names)}), got {len(inputs)}")
    rank = c.pipeline.rank
    dom, groups = None, 0
    for d, t in zip(decls, inputs):
        what = f"input '{d['name']}'"
        chk.tensor(op, what, t)
        chk.same_device(op, what, t, inputs[0], f"input '{names[0]}'")
        if _storage_type(t.dtype) != d["dtype"]:
            raise TypeError(f"{op}: {what} has dtype {t.dtype}; the pipeline declares it {d['dtype'].name}")
        kind = d["kind"]
        if kind == "tensor":
            chk.values(op, what, t, ranks=(rank,))
            dom = tuple(t.shape)
        elif kind == "vector":
            chk.values(op, what, t, ranks=(1,))
        elif kind == "offsets":
            if t.dtype != torch.int32 or t.dim() != 1:
                raise TypeError(f"{op}: {what} (group ends) must be a 1-D torch.int32 tensor")
            groups = t.shape[0]
        elif kind == "counts":
            if t.dtype != torch.int32 or t.dim() != 1:
                raise TypeError(f"{op}: {what} (the mask's row counts) must be a 1-D torch.int32 tensor")
        elif kind == "codes":
            chk.byte_tensor(op, what, t, ranks=(rank,))
        elif kind == "scales" and t.dtype != torch.float32:
            chk.byte_tensor(op, what, t, ranks=(rank,))
    if dom is None:  # a dequantize pipeline: the domain is the codes' shape, FP4 unpacked
        dom = _dequant_domain(c, inputs)
    outs = tuple(c.out(i, dom, groups) for i in range(len(c.info)))
    return Spec(c, tuple(inputs), outs, _numel(dom))


def _storage_type(dtype: torch.dtype):
    """mxjit's storage type of a torch dtype (one-byte dtypes are u8), or None."""
    if dtype in VALUE_DTYPES:
        return VALUE_DTYPES[dtype]
    if dtype.itemsize == 1 and dtype not in (torch.bool,):
        return mxjit.u8
    return {torch.int32: mxjit.i32, torch.int64: mxjit.i64}.get(dtype)


def _dequant_domain(c, inputs):
    for d, t in zip(c.inputs, inputs):
        if d["kind"] == "codes":
            shape = list(t.shape)
            if d["packed"]:
                shape[d["axis"]] = shape[d["axis"]] * 2
            return tuple(shape)
    raise ValueError("mxjit.run: the pipeline has no full-rank input to take the domain from")


_register("quantize", "(Tensor x, str elem=\"e4m3\", int block_size=32, int axis=-1, str scaling_mode=\"rceil\", "
          "str data_layout=\"row_major\", str scale_layout=\"linear\", str nan_policy=\"nan_block\", "
          "bool fp4x2=False) -> (Tensor, Tensor)", quantize_spec)
_register("to_mxfp8_dim0", "(Tensor x, int inner_block_size=32, str scaling_mode=\"rceil\") -> (Tensor, Tensor)",
          to_mxfp8_dim0_spec)
_register("to_mxfp8_dim1", "(Tensor x, int inner_block_size=32, str scaling_mode=\"rceil\", "
          "str scale_layout=\"linear\") -> (Tensor, Tensor)", to_mxfp8_dim1_spec)
_register("mxfp8_quantize", "(Tensor x, bool rowwise=False, bool colwise=True, str scaling_mode=\"rceil\", "
          "int block_size=32, str scale_layout=\"linear\") -> (Tensor, Tensor, Tensor, Tensor)", mxfp8_quantize_spec)
_register("mxfp8_quantize_3d", "(Tensor x, int block_size=32, int scale_block_dim1=32, int scale_block_dim2=1, "
          "str scaling_mode=\"rceil\", bool blocked_scale_output=True) -> (Tensor, Tensor)", mxfp8_quantize_3d_spec)
_register("quantize_grouped", "(Tensor x, Tensor offsets, str elem=\"e4m3\", int block_size=32, int axis=1, "
          "str scaling_mode=\"rceil\") -> (Tensor, Tensor)", quantize_grouped_spec)
_register("fp8_per_group_colwise_scales", "(Tensor x, Tensor offsets, ScalarType? output_dtype=None, "
          "bool round_scales_to_power_of_2=False) -> (Tensor, Tensor)", fp8_per_group_colwise_scales_spec)
_register("fp8_per_group_rowwise_scales", "(Tensor x, Tensor offsets, ScalarType? output_dtype=None, "
          "bool round_scales_to_power_of_2=False) -> (Tensor, Tensor)", fp8_per_group_rowwise_scales_spec)
_register("nvfp4_quantize", "(Tensor x, str convention=\"torchao\", str scale_layout=\"linear\", bool fp4x2=False) "
          "-> (Tensor, Tensor, Tensor)", nvfp4_quantize_spec)
_register("dequantize", "(Tensor data, Tensor scale, str elem=\"e4m3\", int block_size=32, int axis=-1, "
          "ScalarType? out_dtype=None) -> Tensor", dequantize_spec)
_register("mx_block_rearrange", "(Tensor scales) -> Tensor", mx_block_rearrange_spec)
_register("run", "(str pipeline, Tensor[] inputs, bool fp4x2=False) -> Tensor[]", run_spec, returns_list=True)

__all__ = ["ELEM_NAMES", "register_pipeline", "mx_block_rearrange"]
