"""Every mxjit cast that torchao also has, timed next to torchao's fastest path for the same output bytes,
in one process on one GPU, with the bytes of every compared pair checked (issue 35, "op by op").

    python bench/python/peers.py [--shapes 16384x16384,16640x5120,8192x5120] [--shapes3d 16x8192x5120,...]
                                 [--act-shapes 16384x7168,8192x5120] [--weight-shapes 7168x16384,5120x8192]
                                 [--ops dim0,dim1,...] [--iters 50] [--out prefix] [--device 0]
    python bench/python/peers.py --dry-run      # tiny shapes on CPU tensors: the comparisons only, no timing

For each op and shape it prints: mxjit's median microseconds (CUDA events, warm-up, inputs rotated past
the L2, random normal bf16), that time as a % of a device-to-device copy moving the same bytes (read +
written, measured in the same run), and per torchao peer its microseconds, the ratio peer/mxjit and
whether the bytes agree (or how many differ, with the reason where torchao is known to differ). A peer
torchao lacks, or that cannot run here (its Blackwell-only kernels on sm_90, Triton on CPU), is skipped
with one line saying why. ``--out prefix`` writes prefix.csv and prefix.md (the table).
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import torch

import benchutil as bu
import blockwise_casts as bc
import fp8_casts as fc

# ---- arguments ----

DEFAULT_SHAPES = "16384x16384,16640x5120,8192x5120"
# 3-D expert weights (E, N, K): the MoE step's weights at 16 and 64 experts, and 8192x5120 split over E.
DEFAULT_SHAPES3D = "16x8192x5120,64x8192x5120,16x512x5120,64x128x5120"
# The blockwise FP8 casts (op group "blockwise"): activations (M, K) and weights (N, K), DeepSeek-V3's and a
# 5120-wide model's.
DEFAULT_ACT_SHAPES = "16384x7168,8192x5120"
DEFAULT_WEIGHT_SHAPES = "7168x16384,5120x8192"
OPS = ("dim0", "dim1", "dim01", "mxfp4", "mxfp6", "nvfp4", "3d", "blocked", "blocked3d", "mgroups", "kgroups",
       "fp8_colwise", "fp8_rowwise", "fp8_row2d", "fp8_col3d", "fp8_row3d_t", "blockwise")


def parse_shapes(text: str, rank: int) -> List[tuple]:
    """'AxB,CxD' -> [(A, B), (C, D)] (rank 2) or 'ExNxK,...' (rank 3); ValueError naming the bad item."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.lower().split("x")
        try:
            dims = tuple(int(p) for p in parts)
        except ValueError:
            raise ValueError(f"shape {item!r}: expected {'x'.join(['N'] * rank)} with integers") from None
        if len(dims) != rank or min(dims) <= 0:
            raise ValueError(f"shape {item!r}: expected {rank} positive extents ({'x'.join(['N'] * rank)})")
        out.append(dims)
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="2-D shapes MxK, comma-separated")
    ap.add_argument("--shapes3d", default=DEFAULT_SHAPES3D, help="3-D expert-weight shapes ExNxK")
    ap.add_argument("--act-shapes", default=DEFAULT_ACT_SHAPES,
                    help="blockwise: activation shapes MxK (1x128 and 128x1 groups; multiples of 128)")
    ap.add_argument("--weight-shapes", default=DEFAULT_WEIGHT_SHAPES,
                    help="blockwise: weight shapes NxK (128x128 tiles; multiples of 128)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"subset of: {', '.join(OPS)}")
    ap.add_argument("--groups", type=int, default=16, help="token groups of the jagged cases (one of them empty)")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per measurement (median)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true", help="torchao's torch paths eager, not torch.compile'd")
    ap.add_argument("--dry-run", action="store_true",
                    help="tiny shapes on CPU tensors: compare bytes where both sides run on CPU, no timing")
    ap.add_argument("--out", default=None, help="also write <out>.csv and <out>.md")
    a = ap.parse_args(argv)
    a.shapes = parse_shapes(a.shapes, 2)
    a.shapes3d = parse_shapes(a.shapes3d, 3)
    a.act_shapes = parse_shapes(a.act_shapes, 2)
    a.weight_shapes = parse_shapes(a.weight_shapes, 2)
    odd = [f"{m}x{k}" for m, k in a.act_shapes + a.weight_shapes if m % bc.BLOCK or k % bc.BLOCK]
    if odd:
        ap.error(f"--act-shapes/--weight-shapes: {', '.join(odd)} not multiples of {bc.BLOCK} (torchao asserts it)")
    a.ops = [o.strip() for o in a.ops.split(",") if o.strip()]
    unknown = [o for o in a.ops if o not in OPS]
    if unknown:
        ap.error(f"--ops: unknown {', '.join(unknown)} (known: {', '.join(OPS)})")
    if a.groups < 2:
        ap.error("--groups must be at least 2 (one group is left empty)")
    if a.dry_run:
        a.shapes, a.shapes3d, a.no_compile = [(256, 128), (384, 160)], [(3, 64, 96)], True
        a.act_shapes, a.weight_shapes = [(256, 384), (384, 256)], [(256, 384)]
        a.groups = min(a.groups, 4)
    return a


# ---- inputs ----

def jagged_offsets(total: int, groups: int, multiple: int, seed: int = 0) -> List[int]:
    """Group ends (cumulative) of `groups` random sizes that are multiples of `multiple` and sum to `total`
    (itself a multiple), group 1 empty -- a router's output as the MoE step sees it."""
    if total % multiple:
        raise ValueError(f"total {total} is not a multiple of {multiple}")
    rng = random.Random(seed)
    units = total // multiple
    w = [rng.uniform(0.5, 1.5) for _ in range(groups)]
    w[1] = 0.0
    sizes = [int(units * wi / sum(w)) for wi in w]
    sizes[0] += units - sum(sizes)
    ends, acc = [], 0
    for s in sizes:
        acc += s * multiple
        ends.append(acc)
    return ends


def randn(shape, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.bfloat16, device=device)


# ---- peers and cases ----

class Skip(Exception):
    """A peer that cannot run here; the message says why."""


@dataclass
class Peer:
    name: str
    build: Callable  # (device, compile: bool) -> fn(*args) -> list of tensors; raises Skip
    known: str = ""  # why the bytes may differ (torchao's documented behaviour), shown with the count
    compilable: bool = False  # torch code that runs torch.compile'd unless --no-compile

    def label(self, compile_: bool) -> str:
        return self.name + ((" (compiled)" if compile_ else " (eager)") if self.compilable else "")


@dataclass
class Case:
    op: str
    shape: str
    make: Callable  # (device, seed) -> args tuple
    mx: Callable  # (*args) -> list of tensors
    peers: List[Peer] = field(default_factory=list)


def _ao():
    """torchao's modules (ImportError when absent)."""
    import torchao.prototype.moe_training.kernels as moe_k  # noqa: PLC0415
    import torchao.prototype.moe_training.kernels.mxfp8.quant as q  # noqa: PLC0415
    import torchao.prototype.mx_formats.kernels as k  # noqa: PLC0415
    import torchao.prototype.mx_formats.mx_tensor as mxt_ao  # noqa: PLC0415
    import torchao.prototype.mx_formats.nvfp4_tensor as nv  # noqa: PLC0415
    import torchao.prototype.mx_formats.utils as u  # noqa: PLC0415
    from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: PLC0415

    return dict(k=k, q=q, moe_k=moe_k, mx=mxt_ao, nv=nv, u=u, Mode=ScaleCalculationMode)


def _compiled(fn, compile_: bool):
    return torch.compile(fn, dynamic=False) if compile_ else fn


def _torch_peer(name, fn, known=""):
    """A peer that is torch code (torch.compile'd unless --no-compile)."""
    def build(device, compile_):
        return _compiled(fn, compile_)
    return Peer(name, build, known, compilable=True)


def _ref_peer(name, fn, known=""):
    """torchao's torch reference, eager (it loops over groups on the host: no single graph to compile)."""
    return Peer(name + " (torch reference, eager)", lambda device, compile_: fn, known)


def _kernel_peer(name, fn, gate: Optional[Callable] = None, known=""):
    """A peer that is one of torchao's GPU kernels; `gate()` returns a reason it cannot run here, or ''."""
    def build(device, compile_):
        if torch.device(device).type != "cuda":
            raise Skip("a GPU kernel; this run is on CPU tensors")
        why = gate() if gate else ""
        if why:
            raise Skip(why)
        return fn
    return Peer(name, build, known)


def _gate_sm100(flag_module, flag, what):
    def gate():
        if getattr(flag_module, flag, False):
            return ""
        return f"torchao 0.18 provides it only on sm_100 (Blackwell) with CUDA >= 12.8 ({what}); this GPU is " \
               f"sm_{''.join(map(str, torch.cuda.get_device_capability()))}"
    return gate


def build_cases(a: argparse.Namespace) -> List[Case]:
    """The op x shape list, mxjit's call and torchao's peers for each (torchao imported here)."""
    import mxjit.torch as mxt  # noqa: PLC0415

    ao = _ao()
    k, q, moe_k, u, Mode = ao["k"], ao["q"], ao["moe_k"], ao["u"], ao["Mode"]
    to_mx = ao["mx"].to_mx
    e4m3 = torch.float8_e4m3fn
    cases: List[Case] = []
    gate_triton = _gate_sm100(k, "_triton_kernels_available", "mx_formats.kernels._triton_kernels_available")
    gate_cuda = _gate_sm100(k, "_mxfp8_cuda_kernels_available", "its CUDA extension, _mxfp8_cuda_kernels_available")
    gate_cute = _gate_sm100(q, "_mxfp8_cutedsl_kernels_available", "CuTeDSL kernel")
    gate_qcuda = _gate_sm100(q, "_mxfp8_cuda_kernels_available", "its CUDA extension")
    want = set(a.ops)
    ao_casts, ref_casts = fc.torchao_casts(), fc.reference_casts()

    def add(op, shape, make, mx, peers):
        if op.split(" ")[0] in want:
            cases.append(Case(op, shape, make, mx, peers))

    def dim1_ref(x):  # torchao's triton_to_mxfp8_dim1_reference, which exists only where Triton does
        s, qd = to_mx(x.t().contiguous(), e4m3, 32, Mode.RCEIL)
        return qd.t(), s

    for m, kk in a.shapes:
        sh = f"{m}x{kk}"
        x_in = lambda d, s, m=m, kk=kk: (randn((m, kk), d, s),)  # noqa: E731
        add("dim0", sh, x_in, lambda x: list(mxt.to_mxfp8_dim0(x)), [
            _torch_peer("to_mx rceil", lambda x: list(to_mx(x, e4m3, 32, Mode.RCEIL))[::-1]),
            _kernel_peer("triton_to_mxfp8_dim0", lambda x: list(k.triton_to_mxfp8_dim0(x, 32, "rceil")), gate_triton),
            _kernel_peer("mxfp8_quantize_cuda rowwise",
                         lambda x: [t for t in k.mxfp8_quantize_cuda(x, True, False, "rceil")][0::2], gate_cuda)])
        add("dim1", sh, x_in, lambda x: list(mxt.to_mxfp8_dim1(x)), [
            _torch_peer("to_mx(x.t().contiguous()) as triton_to_mxfp8_dim1_reference", lambda x: list(dim1_ref(x))),
            _kernel_peer("triton_to_mxfp8_dim1", lambda x: list(k.triton_to_mxfp8_dim1(x, 32, "rceil")), gate_triton),
            _kernel_peer("mxfp8_quantize_cuda colwise",
                         lambda x: [t for t in k.mxfp8_quantize_cuda(x, False, True, "rceil")][1::2], gate_cuda)])

        def dim01_ref(x):
            s0, q0 = to_mx(x, e4m3, 32, Mode.RCEIL)
            q1, s1 = dim1_ref(x)
            return [q0, s0, q1, s1]

        add("dim01", sh, x_in, lambda x: _reorder(mxt.mxfp8_quantize(x, True, True)), [
            _torch_peer("to_mx + dim1_reference in one graph", dim01_ref),
            _kernel_peer("mxfp8_quantize_cuda both", lambda x: _reorder(k.mxfp8_quantize_cuda(x, True, True, "rceil")),
                         gate_cuda)])
        add("mxfp4 dim0 floor", sh, x_in, lambda x: list(mxt.quantize(x, "e2m1", 32, -1, "floor")), [
            _torch_peer("to_mx fp4 floor", lambda x: list(to_mx(x, torch.float4_e2m1fn_x2, 32, Mode.FLOOR))[::-1])])
        for e6 in ("e2m3", "e3m2"):
            add(f"mxfp6 {e6} dim0 floor", sh, x_in, lambda x, e6=e6: list(mxt.quantize(x, e6, 32, -1, "floor")), [
                _torch_peer(f"to_mx fp6_{e6} floor", lambda x, e6=e6: list(to_mx(x, f"fp6_{e6}", 32, Mode.FLOOR))[::-1])])

        def nvfp4_ref(x):
            amax = torch.max(torch.abs(x)).to(torch.float32)
            s, d = ao["nv"].nvfp4_quantize(x, 16, ao["nv"].per_tensor_amax_to_scale(amax))
            return [d, s, amax.reshape(1)]

        def mslk(x):
            amax = torch.max(torch.abs(x)).to(torch.float32)
            s, d = k.mslk_quantize_nvfp4(x, ao["nv"].per_tensor_amax_to_scale(amax))
            return [d, s, amax.reshape(1)]

        def gate_mslk():
            return "" if k._mslk_available else "needs the mslk package (not installed)"

        add("nvfp4 two-level", sh, x_in, lambda x: list(mxt.nvfp4_quantize(x, "torchao", "linear")), [
            _torch_peer("nvfp4_quantize + per-tensor amax", nvfp4_ref)])
        add("nvfp4 two-level, blocked scales", sh, x_in, lambda x: list(mxt.nvfp4_quantize(x, "torchao", "blocked")), [
            _torch_peer("nvfp4_quantize + per-tensor amax + to_blocked",
                        lambda x: (lambda r: [r[0], u.to_blocked(r[1]).view(r[1].dtype).reshape(
                            -(-r[1].shape[0] // 128) * 128, -(-r[1].shape[1] // 4) * 4), r[2]])(nvfp4_ref(x))),
            _kernel_peer("mslk_quantize_nvfp4 (Triton)", mslk, gate_mslk)])

        # Scales to blocks: the scales of a real cast of x.
        s_in = lambda d, s, m=m, kk=kk: (mxt.to_mxfp8_dim0(randn((m, kk), d, s))[1],)  # noqa: E731
        add("blocked 2-D scales", sh + f" (scales {m}x{kk // 32})", s_in, lambda s: [mxt.mx_block_rearrange(s)], [
            _torch_peer("to_blocked", lambda s: [u.to_blocked(s)]),
            _kernel_peer("triton_mx_block_rearrange", lambda s: [k.triton_mx_block_rearrange(s)])])

        # Token groups: MXFP8 along K with per-group blocked scales (M groups), along M with K groups.
        if m % 32 == 0:
            ends = jagged_offsets(m, a.groups, 32, seed=m)

            def g_in(d, s, m=m, kk=kk, ends=ends):
                return randn((m, kk), d, s), torch.tensor(ends, dtype=torch.int32, device=d)

            def mgroups_cute(x, offs):
                return list(q.mxfp8_quantize_2d_1x32_cutedsl(x, scaling_mode="rceil", offs=offs))

            add("mgroups dim0 + M-group blocked scales", sh + f" G={a.groups}", g_in,
                lambda x, offs: list(mxt.quantize_grouped(x, offs, "e4m3", 32, 1, "rceil")), [
                    Peer("to_mx (compiled) + triton_mx_block_rearrange_2d_M_groups",
                         lambda d, c: _gpu_only(d, _then(_compiled(lambda x: to_mx(x, e4m3, 32, Mode.RCEIL), c),
                                                         lambda r, offs: [r[1], q.triton_mx_block_rearrange_2d_M_groups(
                                                             r[0], offs)]))),
                    _ref_peer("to_mx + torch_to_blocked_2d_M_groups",
                              lambda x, offs: (lambda r: [r[1], q.torch_to_blocked_2d_M_groups(r[0], offs)[0]])(
                                  to_mx(x, e4m3, 32, Mode.RCEIL))),
                    _kernel_peer("mxfp8_quantize_2d_1x32_cutedsl (offs)", mgroups_cute, gate_cute),
                    _kernel_peer("to_mx + mx_block_rearrange_2d_M_groups_cuda",
                                 lambda x, offs: (lambda r: [r[1], q.mx_block_rearrange_2d_M_groups_cuda(r[0], offs)])(
                                     to_mx(x, e4m3, 32, Mode.RCEIL)), gate_qcuda)])
            add("kgroups dim1 + K-group blocked scales", sh + f" G={a.groups}", g_in,
                lambda x, offs: list(mxt.quantize_grouped(x, offs, "e4m3", 32, 0, "rceil")), [
                    Peer("dim1_reference (compiled) + triton_mx_block_rearrange_2d_K_groups",
                         lambda d, c: _gpu_only(d, _then(_compiled(dim1_ref, c),
                                                         lambda r, offs: [r[0], q.triton_mx_block_rearrange_2d_K_groups(
                                                             r[1], offs // 32)]))),
                    _ref_peer("dim1 reference + torch_to_blocked_2d_K_groups",
                              lambda x, offs: (lambda r: [r[0], q.torch_to_blocked_2d_K_groups(r[1], offs // 32)[0]])(
                                  dim1_ref(x)))])

        # FP8 with per-group FP32 scales (the FP8-rowwise MoE recipe's weight-gradient casts).
        if m % 16 == 0 and kk % 16 == 0:
            ends_m = jagged_offsets(m, a.groups, 16, seed=m + 1)
            ends_k = jagged_offsets(kk, a.groups, 16, seed=kk + 2)
            known_tile = "torchao's Triton kernel on jagged groups (its tile)"

            def pg_in(d, s, m=m, kk=kk, ends=None):
                return randn((m, kk), d, s), torch.tensor(ends, dtype=torch.int32, device=d)

            for colwise, ends_g in ((True, ends_m), (False, ends_k)):
                side = "colwise" if colwise else "rowwise"
                mine = mxt.fp8_per_group_colwise_scales if colwise else mxt.fp8_per_group_rowwise_scales
                theirs = getattr(moe_k, f"triton_fp8_per_group_{side}_scales")
                add(f"fp8_{side} per-group (jagged {'rows' if colwise else 'cols'})", sh + f" G={a.groups}",
                    lambda d, s, f=pg_in, e=ends_g: f(d, s, ends=e),
                    lambda x, offs, f=mine: list(f(x, offs, e4m3, True)), [
                        _kernel_peer(f"triton_fp8_per_group_{side}_scales",
                                     lambda x, offs, f=theirs: list(f(x, offs, e4m3, True)), known=known_tile),
                        _ref_peer(f"torch_to_float8_per_group_{side}",
                                  lambda x, offs, c=colwise: list(fc.per_group_reference(x, offs, c)))])
            # Whole-row FP8 (the recipe's activation cast): mxjit's per-group op with one group spanning the row.
            add("fp8_row2d whole-row pow2", sh, x_in, lambda x: list(fc.rowwise_2d_mxjit(x)), [
                _kernel_peer("triton_fp8_rowwise_2d_scale_and_cast", lambda x: list(ao_casts.rowwise_2d(x))),
                _ref_peer("tensor_to_scale + to_fp8_saturated", lambda x: list(ref_casts.rowwise_2d(x)))])

    # torchao's blockwise FP8 training casts (blockwise_casts.py), mxjit's pipeline with the same bytes and layouts.
    for op in bc.OPS:
        for m, kk in a.weight_shapes if op.startswith("weight") else a.act_shapes:
            ref = bc.torch_reference(op)
            add(f"blockwise {op}", f"{m}x{kk}", lambda d, s, m=m, kk=kk: (randn((m, kk), d, s),),
                lambda x, f=bc.mxjit_op(op): list(f(x)), [
                    _kernel_peer(f"triton_fp8_blockwise_{op}", lambda x, f=bc.torchao_op(op): list(f(x))),
                    Peer(ref.name + " (torch reference, eager)", _host_loop_gate(ref))])

    for e, n, kk in a.shapes3d:
        sh = f"{e}x{n}x{kk}"
        w_in = lambda d, s, e=e, n=n, kk=kk: (randn((e, n, kk), d, s),)  # noqa: E731

        def ref3d(w):
            return list(q._mxfp8_quantize_reference_3d(w, block_size=32, scale_block_dim1=32, scale_block_dim2=1,
                                                       scaling_mode="rceil", blocked_scale_output=True))

        add("3d expert weights, blocked scales", sh, w_in, lambda w: list(mxt.mxfp8_quantize_3d(w)), [
            _torch_peer("_mxfp8_quantize_reference_3d", ref3d),
            _kernel_peer("mxfp8_quantize_cuda_3d", lambda w: list(q.mxfp8_quantize_cuda_3d(w)), gate_cute)])
        # The MXFP8 forward's weight scales (E, N, K/32) into per-expert blocks.
        s3_in = lambda d, s, e=e, n=n, kk=kk: (mxt.to_mxfp8_dim0(randn((e, n, kk), d, s))[1],)  # noqa: E731
        add("blocked3d per-expert scales", sh + f" (scales {e}x{n}x{kk // 32})", s3_in,
            lambda s: [mxt.mx_block_rearrange(s).view(s.shape[0], -1)], [
                _kernel_peer("triton_mx_block_rearrange_per_group_3d", lambda s: [q.triton_mx_block_rearrange_per_group_3d(s)]),
                _torch_peer("torch_to_blocked_per_group_3d", lambda s: [q.torch_to_blocked_per_group_3d(s)])])
        # FP8-rowwise recipe, expert weights B_t (E, K, N) column-major (B = (E, N, K) row-major in memory).
        bt_in = lambda d, s, e=e, n=n, kk=kk: (randn((e, n, kk), d, s).transpose(-2, -1),)  # noqa: E731
        add("fp8_col3d B_t colwise pow2", f"B_t {e}x{kk}x{n}", bt_in, lambda bt: list(fc.colwise_3d_mxjit(bt)), [
            _kernel_peer("triton_fp8_colwise_3d_scale_and_cast", lambda bt: list(ao_casts.colwise_3d(bt))),
            _ref_peer("tensor_to_scale + to_fp8_saturated", lambda bt: list(ref_casts.colwise_3d(bt)))])
        add("fp8_row3d_t B_t transposed rowwise pow2", f"B_t {e}x{kk}x{n}", bt_in,
            lambda bt: list(fc.rowwise_3d_transpose_mxjit(bt)), [
                _kernel_peer("triton_fp8_rowwise_3d_transpose_rhs", lambda bt: list(ao_casts.rowwise_3d_transpose(bt))),
                _ref_peer("torch_to_3d_rowwise_float8_transpose_rhs",
                          lambda bt: list(ref_casts.rowwise_3d_transpose(bt)))])
    return cases


def _host_loop_gate(ref):
    """A torch reference, skipped on the GPU where it loops over columns on the host (compared in --dry-run)."""
    def build(device, compile_):
        if ref.loops and torch.device(device).type == "cuda":
            raise Skip("loops over the columns on the host, one small op each; compared in the --dry-run")
        return lambda x: list(ref.fn(x))
    return build


def _reorder(r):
    """(rowwise data, colwise data, rowwise scales, colwise scales) -> [q0, s0, q1, s1]."""
    return [r[0], r[2], r[1], r[3]]


def _then(first, second):
    """fn(x, offs) = second(first(x), offs): a compiled cast followed by a Triton relayout."""
    return lambda x, offs: second(first(x), offs)


def _gpu_only(device, fn):
    if torch.device(device).type != "cuda":
        raise Skip("includes a Triton kernel; this run is on CPU tensors")
    return fn


# ---- running ----

@dataclass
class Row:
    op: str
    shape: str
    mx_us: Optional[float]
    copy_us: Optional[float]
    peer: str
    peer_us: Optional[float]
    agree: str

    def cells(self):
        f = lambda v: "" if v is None else f"{v:.1f}"  # noqa: E731
        pct = "" if not (self.mx_us and self.copy_us) else f"{100.0 * self.copy_us / self.mx_us:.1f}"
        ratio = "" if not (self.mx_us and self.peer_us) else f"{self.peer_us / self.mx_us:.2f}"
        return [self.op, self.shape, f(self.mx_us), pct, self.peer, f(self.peer_us), ratio, self.agree]


HEADERS = ["op", "shape", "mxjit us", "% of copy", "peer", "peer us", "peer/mxjit", "bytes agree"]


def run_case(c: Case, a: argparse.Namespace, device, skips: dict) -> List[Row]:
    """Times mxjit and each peer on the same inputs and compares their bytes (timing only on CUDA)."""
    timed = torch.device(device).type == "cuda"
    first = c.make(device, 0)
    mine = c.mx(*first)
    inputs = [first]
    mx_us = copy_us = None
    if timed:
        n = bu.rotation_count(bu.tensor_bytes(first), device)
        inputs += [c.make(device, i) for i in range(1, n)]
        mx_us = bu.gpu_time_us(c.mx, inputs, a.warmup, a.iters)
        copy_us = bu.copy_time_us(bu.tensor_bytes(first) + bu.tensor_bytes(mine), device, a.warmup, a.iters)
    rows = []
    for p in c.peers:
        try:
            fn = p.build(device, not a.no_compile)
            theirs = fn(*first)
        except Skip as why:
            skips.setdefault((p.label(not a.no_compile), str(why)), []).append(f"{c.op} {c.shape}")
            continue
        except Exception as err:  # a peer that fails here is reported, never fatal
            why = f"fails here: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:240]
            skips.setdefault((p.label(not a.no_compile), why), []).append(f"{c.op} {c.shape}")
            continue
        agree = bu.describe(bu.byte_diff(mine, theirs), p.known)
        peer_us = bu.gpu_time_us(fn, inputs, a.warmup, a.iters) if timed else None
        rows.append(Row(c.op, c.shape, mx_us, copy_us, p.label(not a.no_compile), peer_us, agree))
        del theirs
    if not rows:
        rows.append(Row(c.op, c.shape, mx_us, copy_us, "(no peer runs here)", None, ""))
    del inputs, first, mine
    if timed:
        torch.cuda.empty_cache()
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parse_args(argv)
    if a.dry_run:
        device = "cpu"
    elif not torch.cuda.is_available():
        print("peers.py: needs a CUDA GPU (or --dry-run for the CPU comparison)", file=sys.stderr)
        return 2
    else:
        device = f"cuda:{a.device}"
        torch.cuda.set_device(a.device)
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.recompile_limit = 256
    import torchao  # noqa: PLC0415

    if device == "cpu":
        print(f"== peers (dry run on CPU tensors; torch {torch.__version__}, torchao {torchao.__version__}) ==")
    else:
        p = torch.cuda.get_device_properties(a.device)
        print(f"== peers on {p.name} (sm_{p.major}{p.minor}), torch {torch.__version__}, torchao "
              f"{torchao.__version__}, median of {a.iters} after {a.warmup} warm-up ==")
    skips: dict = {}
    rows: List[Row] = []
    for c in build_cases(a):
        try:
            new = run_case(c, a, device, skips)
        except Exception as err:  # mxjit failing is a result too, not a crash of the whole table
            new = [Row(c.op, c.shape, None, None, "", None, f"MXJIT FAILED: {type(err).__name__}: {err}"[:200])]
        rows += new
        for r in new:
            print("  " + " | ".join(r.cells()), flush=True)
    print()
    print(bu.table([r.cells() for r in rows], HEADERS))
    for (name, why), where in skips.items():
        print(f"skip: {name}: {why} ({len(where)} case{'s' if len(where) > 1 else ''})")
    if a.out:
        with open(a.out + ".csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(HEADERS)
            w.writerows(r.cells() for r in rows)
        with open(a.out + ".md", "w") as f:
            f.write("| " + " | ".join(HEADERS) + " |\n|" + "---|" * len(HEADERS) + "\n")
            for r in rows:
                f.write("| " + " | ".join(r.cells()) + " |\n")
            for (name, why), where in skips.items():
                f.write(f"\nskip: {name}: {why}\n")
        print(f"wrote {a.out}.csv, {a.out}.md")
    bad = [r for r in rows if "UNEXPECTED" in r.agree or "FAILED" in r.agree or "NOT COMPARED" in r.agree]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
