"""One grouped-GEMM MoE layer trained on Hopper: bf16 against torchao's FP8-rowwise recipe with its own
casts and with mxjit's casts, in one run on one GPU (issue 35, "the step").

    python bench/python/moe_step.py [--M 16640 --K 5120 --N 8192 --E 16] [--steps 20] [--profile]
    python bench/python/moe_step.py --mxfp8-casts          # the MXFP8 recipe's casts per step, mxjit vs torchao
    torchrun --nproc-per-node 2 bench/python/moe_step.py   # data-parallel copies, one GPU per rank

The layer: tokens A (M, K) bf16, expert weights B_t (E, K, N) bf16 column-major (strides (K*N, 1, K)),
router output given as token-group ends ``offs`` (int32, jagged multiples of 16, group 1 empty; --uniform
for equal groups). A step is out = grouped_mm(A, B_t, offs) and out.backward(grad_out) (grad_out fixed
random). Modes, timed in this order on the same tensors: the median of --steps synchronised steps after
--warmup ("ms per step": the host's latency at each step's start included), and --steps steps enqueued back
to back as a training loop runs them ("back to back": that latency hidden while the host keeps ahead):

  bf16     torch._grouped_mm (or a loop over groups where it is missing: the output says which)
  torchao  torchao's _to_fp8_rowwise_then_scaled_grouped_mm (its Triton casts, torch._scaled_grouped_mm)
  mxjit    the same recipe (Fp8RowwiseGroupedMM below, torchao's autograd function step for step) with
           mxjit's casts (fp8_casts.py says which mxjit op serves each cast)

Numerics (--no-check to skip): every cast of the recipe on the step's tensors byte for byte against
torchao's Triton kernel and torchao's torch reference; Fp8RowwiseGroupedMM with torchao's casts equal to
torchao's own function bit for bit (the mirror is faithful); the mxjit step's output and gradients
against the step with torchao's torch-reference casts (and, for scale, the bf16 step's).
--profile runs a few steps of each FP8 mode under torch.profiler and prints the casts' share of GPU time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import List, Optional, Sequence

import torch

import benchutil as bu
import fp8_casts as fc
from peers import jagged_offsets

E4M3 = torch.float8_e4m3fn


# ---- arguments and inputs ----

def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--M", type=int, default=16640, help="tokens")
    ap.add_argument("--K", type=int, default=5120, help="model dim")
    ap.add_argument("--N", type=int, default=8192, help="hidden dim per expert")
    ap.add_argument("--E", type=int, default=16, help="experts")
    ap.add_argument("--uniform", action="store_true", help="equal token groups (default: jagged, one empty)")
    ap.add_argument("--multiple", type=int, default=16, help="token groups are multiples of this")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--modes", default="bf16,torchao,mxjit")
    ap.add_argument("--profile", action="store_true", help="the casts' share of GPU time per FP8 mode")
    ap.add_argument("--no-check", action="store_true", help="skip the numerics")
    ap.add_argument("--mxfp8-casts", action="store_true",
                    help="time the MXFP8 recipe's casts of one step (mxjit vs torchao's Hopper paths) instead")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    a.modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in a.modes if m not in ("bf16", "torchao", "mxjit")]
    if bad:
        ap.error(f"--modes: unknown {', '.join(bad)} (bf16, torchao, mxjit)")
    for name in ("M", "K", "N", "E", "steps", "multiple"):
        if getattr(a, name) <= 0:
            ap.error(f"--{name} must be positive")
    if a.K % 16 or a.N % 16:
        ap.error("--K and --N must be multiples of 16 (torch._scaled_grouped_mm)")
    if a.M % a.multiple:
        ap.error(f"--M={a.M} must be a multiple of --multiple={a.multiple}")
    if a.E < 2 and not a.uniform:
        ap.error("jagged groups need --E >= 2 (group 1 is empty)")
    return a


def group_ends(a: argparse.Namespace, multiple: Optional[int] = None) -> List[int]:
    m = multiple or a.multiple
    if a.uniform:
        units = a.M // m
        return [((g + 1) * units // a.E) * m for g in range(a.E)]
    return jagged_offsets(a.M, a.E, m, seed=a.seed + 7)


def make_layer(a, device, rank: int = 0):
    """A (M, K) with grad, B_t (E, K, N) column-major with grad, offs, grad_out (M, N): random normal.
    Data-parallel: tokens and grad_out differ per rank, the weights are the same."""
    g = torch.Generator(device=device).manual_seed(a.seed)
    b = torch.randn((a.E, a.N, a.K), generator=g, device=device, dtype=torch.bfloat16) * 0.02
    b_t = b.transpose(-2, -1).detach().requires_grad_(True)  # (E, K, N) strides (K*N, 1, K)
    g.manual_seed(a.seed + 1 + rank)
    x = torch.randn((a.M, a.K), generator=g, device=device, dtype=torch.bfloat16).requires_grad_(True)
    grad_out = torch.randn((a.M, a.N), generator=g, device=device, dtype=torch.bfloat16)
    offs = torch.tensor(group_ends(a), dtype=torch.int32, device=device)
    return x, b_t, offs, grad_out


# ---- the three layers ----

def grouped_mm_bf16_kind() -> str:
    return "torch._grouped_mm" if hasattr(torch, "_grouped_mm") else "a loop over groups (no torch._grouped_mm)"


def grouped_mm_bf16(x, b_t, offs):
    if hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(x, b_t, offs=offs, out_dtype=torch.bfloat16)
    outs, start = [], 0
    for g, end in enumerate(offs.tolist()):
        outs.append(x[start:end] @ b_t[g])
        start = end
    return torch.cat(outs)


class Fp8RowwiseGroupedMM(torch.autograd.Function):
    """torchao 0.18's _Float8GroupedMM (pad_token_groups_for_grouped_mm=False) with its four casts taken from
    a fp8_casts.Casts: the same scaled grouped GEMMs on the same operands, so with torchao's casts it gives
    torchao's results bit for bit, and the casts are the only difference between the modes."""

    @staticmethod
    def forward(ctx, x, b_t, offs, casts):
        xq, xs = casts.rowwise_2d(x)                    # (M, K) row-major, (M, 1)
        bq, bs = casts.colwise_3d(b_t)                  # (E, K, N) column-major, (E, 1, N)
        ctx.save_for_backward(x, b_t, offs)
        ctx.casts = casts
        return torch._scaled_grouped_mm(xq, bq, xs.squeeze(-1).reciprocal(), bs.squeeze(1).reciprocal(), offs,
                                        out_dtype=torch.bfloat16, use_fast_accum=True)

    @staticmethod
    def backward(ctx, grad_out):
        x, b_t, offs = ctx.saved_tensors
        casts = ctx.casts
        gq, gs = casts.rowwise_2d(grad_out)             # (M, N) row-major, (M, 1)
        bq, bs = casts.rowwise_3d_transpose(b_t)        # (E, N, K) column-major, (E, K)
        grad_x = torch._scaled_grouped_mm(gq, bq, gs.squeeze(-1).reciprocal(), bs.reciprocal(), offs,
                                          out_dtype=torch.bfloat16, use_fast_accum=True)
        gcq, gcs, xcq, xcs = casts.per_group_colwise_dual(grad_out, x, offs)
        grad_b = torch._scaled_grouped_mm(gcq.t(), xcq, gcs.t().reciprocal(), xcs.reciprocal(), offs,
                                          out_dtype=torch.bfloat16, use_fast_accum=True)
        return grad_x, grad_b.transpose(-2, -1), None, None


def layer_fn(mode: str):
    if mode == "bf16":
        return grouped_mm_bf16
    if mode == "torchao":
        from torchao.prototype.moe_training.fp8_grouped_mm import _to_fp8_rowwise_then_scaled_grouped_mm  # noqa

        return lambda x, b_t, offs: _to_fp8_rowwise_then_scaled_grouped_mm(x, b_t, offs, torch.bfloat16, E4M3, False)
    casts = {"mxjit": fc.mxjit_casts, "torchao-casts": fc.torchao_casts, "reference": fc.reference_casts}[mode]()
    return lambda x, b_t, offs: Fp8RowwiseGroupedMM.apply(x, b_t, offs, casts)


def run_step(fn, x, b_t, offs, grad_out):
    x.grad = b_t.grad = None
    out = fn(x, b_t, offs)
    out.backward(grad_out)
    return out


# ---- checks ----

def probe_scaled_grouped_mm(device) -> str:
    """'' when torch._scaled_grouped_mm (FP8 rowwise, 2-D x 3-D with offsets) runs here, else why not."""
    if not hasattr(torch, "_scaled_grouped_mm"):
        return "torch has no _scaled_grouped_mm"
    try:
        a = torch.randn(64, 32, device=device).to(E4M3)
        b = torch.randn(2, 32, 48, device=device).to(E4M3).transpose(-2, -1).contiguous().transpose(-2, -1)
        sa, sb = torch.ones(64, device=device), torch.ones(2, 48, device=device)
        offs = torch.tensor([32, 64], dtype=torch.int32, device=device)
        out = torch._scaled_grouped_mm(a, b, sa, sb, offs, out_dtype=torch.bfloat16, use_fast_accum=True)
        want = torch.cat([a[:32].float() @ b[0].float(), a[32:].float() @ b[1].float()])
        err = (out.float() - want).abs().max().item()
        return "" if err < 0.5 else f"runs but disagrees with the float matmul (max abs error {err})"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def cast_checks(x, b_t, offs, grad_out) -> List[list]:
    """Each recipe cast on the step's tensors: mxjit against torchao's Triton kernel and torch reference."""
    mx, ao, ref = fc.mxjit_casts(), fc.torchao_casts(), fc.reference_casts()
    jagged = "torchao's Triton kernel on jagged groups (its tile)"
    calls = [("rowwise_2d (A)", lambda c: c.rowwise_2d(x.detach()), ""),
             ("rowwise_2d (grad_out)", lambda c: c.rowwise_2d(grad_out), ""),
             ("colwise_3d (B_t)", lambda c: c.colwise_3d(b_t.detach()), ""),
             ("rowwise_3d_transpose (B_t)", lambda c: c.rowwise_3d_transpose(b_t.detach()), ""),
             ("per_group_colwise_dual (grad_out, A)", lambda c: c.per_group_colwise_dual(grad_out, x.detach(), offs),
              jagged)]
    rows = []
    for name, call, known in calls:
        try:
            mine = list(call(mx))
        except Exception as e:  # noqa: BLE001
            rows.append([name, f"MXJIT FAILED: {type(e).__name__}: {e}"[:160], "", ""])
            continue
        res = []
        for other in (ao, ref):
            try:
                res.append(bu.describe(bu.byte_diff(mine, list(call(other))), known if other is ao else ""))
            except Exception as e:  # noqa: BLE001
                res.append(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:120])
        strides = " ".join(str(tuple(t.stride())) for t in mine if t.dim() > 1)
        rows.append([name, res[0], res[1], strides])
    return rows


def compare_steps(x, b_t, offs, grad_out, modes) -> List[list]:
    """Output and gradients of each mode against the step with torchao's torch-reference casts; the mirror
    (Fp8RowwiseGroupedMM on torchao's casts) against torchao's own function. Keeps two results at a time."""
    def results(mode):
        out = run_step(layer_fn(mode), x, b_t, offs, grad_out)
        return [out.detach().clone(), x.grad.clone(), b_t.grad.clone()]

    base = results("reference")
    rows, torchao = [], None
    for mode in modes:
        r = results(mode)
        d = bu.byte_diff(r, base)
        rel = max(((u.float() - v.float()).norm() / v.float().norm().clamp_min(1e-30)).item() for u, v in zip(r, base))
        rows.append([mode, bu.describe(d, "bf16 has no FP8 rounding" if mode == "bf16" else ""), f"{rel:.3e}"])
        if mode == "torchao":
            torchao = r
        elif mode == "torchao-casts" and torchao is not None:
            rows.append(["  torchao-casts vs torchao's own function", bu.describe(bu.byte_diff(r, torchao)), ""])
        del r
    return rows


# ---- timing and the profile ----

def warm_up(fn, x, b_t, offs, grad_out, warmup) -> None:
    for _ in range(warmup):
        run_step(fn, x, b_t, offs, grad_out)
    torch.cuda.synchronize()


def time_steps(fn, x, b_t, offs, grad_out, steps, warmup) -> float:
    warm_up(fn, x, b_t, offs, grad_out, warmup)
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run_step(fn, x, b_t, offs, grad_out)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def time_pipelined(fn, x, b_t, offs, grad_out, steps, warmup, rounds: int = 5) -> float:
    """Milliseconds per step of `steps` steps enqueued back to back (no synchronisation between them, as a
    training loop runs): the host enqueues ahead of the GPU, so its latency at a step's start is hidden.
    Median of `rounds` such runs."""
    warm_up(fn, x, b_t, offs, grad_out, warmup)
    times = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(steps):
            run_step(fn, x, b_t, offs, grad_out)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / steps)
    return statistics.median(times)


GEMM_WORDS = ("gemm", "cutlass", "grouped_mm", "sm90_xmma", "nvjet")
CAST_WORDS = ("mxjit", "triton_fp8", "fp8_per_group", "scale_and_cast", "transpose_rhs", "to_mxfp8", "rearrange",
              "swizzle")


def is_cast(kernel: str) -> bool:
    """Whether a GPU kernel's name is one of the recipe's casts. GEMM kernels never are, whatever their
    template arguments mention (CUTLASS's grouped GEMM names hold "Swizzle")."""
    n = kernel.lower()
    return not any(w in n for w in GEMM_WORDS) and any(w in n for w in CAST_WORDS)


def profile_share(fn, x, b_t, offs, grad_out, steps=3):
    """(casts' share of GPU time, per-kernel [name, us per step, is cast] sorted by time)."""
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

    run_step(fn, x, b_t, offs, grad_out)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            run_step(fn, x, b_t, offs, grad_out)
        torch.cuda.synchronize()
    per = {}
    spans = []
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:  # a kernel (or memcpy/memset) on the GPU
            per[ev.name] = per.get(ev.name, 0.0) + ev.time_range.elapsed_us() / steps
            spans.append((ev.time_range.start, ev.time_range.end, ev.name))
    total = sum(per.values()) or 1.0
    cast = sum(v for n, v in per.items() if is_cast(n))
    kernels = sorted(([n, v, is_cast(n)] for n, v in per.items()), key=lambda r: -r[1])
    return cast / total, total, kernels, idle_gaps(spans)


def idle_gaps(spans) -> list:
    """[gap us, kernel before, kernel after] for each stretch where the GPU ran nothing between two
    kernels of the profiled steps, longest first (the steps run back to back, so a gap is host time)."""
    spans = sorted(spans)
    gaps, end = [], None
    for s, e, name in spans:
        if end is not None and s > end[0]:
            gaps.append([s - end[0], end[1], name])
        if end is None or e > end[0]:
            end = (e, name)
    return sorted(gaps, key=lambda g: -g[0])


def host_ms(fn, x, b_t, offs, grad_out, steps) -> float:
    """Median host time to enqueue one step (no synchronisation inside): above the GPU time per step,
    the step is bound by the host."""
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        run_step(fn, x, b_t, offs, grad_out)
        times.append(1e3 * (time.perf_counter() - t))
    torch.cuda.synchronize()
    return statistics.median(times)


# ---- the MXFP8 recipe's casts of one step (Blackwell GEMMs; the casts are measurable here) ----

def mxfp8_cast_cases(a):
    """peers.Case for each MXFP8 cast of one step at this layer's shapes (token groups multiples of 32), with
    torchao's Hopper paths (torch.compile'd torch + its Triton relayouts) and its torch references as peers."""
    import mxjit.torch as mxt  # noqa: PLC0415

    import peers  # noqa: PLC0415

    ends = group_ends(a, 32)
    ao = peers._ao()
    q, Mode, to_mx = ao["q"], ao["Mode"], ao["mx"].to_mx

    def tok(rows, cols):
        return lambda d, s: (peers.randn((rows, cols), d, s), torch.tensor(ends, dtype=torch.int32, device=d))

    def weights(d, s):  # W = B_t^T: (E, N, K) row-major
        return (peers.randn((a.E, a.N, a.K), d, s),)

    def mgroups(x, offs):
        return list(mxt.quantize_grouped(x, offs, "e4m3", 32, 1, "rceil"))

    def kgroups(x, offs):
        return list(mxt.quantize_grouped(x, offs, "e4m3", 32, 0, "rceil"))

    def w_dim0(w):
        qd, s = mxt.quantize(w, "e4m3", 32, -1, "rceil", scale_layout="blocked")
        return [qd, s.view(w.shape[0], -1)]

    def dim0(x):
        s, qd = to_mx(x, E4M3, 32, Mode.RCEIL)
        return [qd, s]

    def dim1(x):  # torchao's triton_to_mxfp8_dim1_reference
        s, qd = to_mx(x.t().contiguous(), E4M3, 32, Mode.RCEIL)
        return [qd.t(), s]

    def ref3d(w):
        return list(q._mxfp8_quantize_reference_3d(w, block_size=32, scale_block_dim1=32, scale_block_dim2=1,
                                                   scaling_mode="rceil", blocked_scale_output=True))

    def then_triton(first, relayout, name):
        """The compiled cast, then torchao's Triton relayout of its scales (GPU only)."""
        def build(device, compile_):
            if torch.device(device).type != "cuda":
                raise peers.Skip("includes a Triton kernel; this run is on CPU tensors")
            f = peers._compiled(first, compile_)
            return lambda *args: relayout(f(args[0]), *args[1:])
        return peers.Peer(name, build)

    m_peers = [then_triton(dim0, lambda r, offs: [r[0], q.triton_mx_block_rearrange_2d_M_groups(r[1], offs)],
                           "dim0 to_mx (compiled) + triton_mx_block_rearrange_2d_M_groups"),
               peers._ref_peer("to_mx + torch_to_blocked_2d_M_groups",
                               lambda x, offs: (lambda r: [r[0], q.torch_to_blocked_2d_M_groups(r[1], offs)[0]])(dim0(x)))]
    k_peers = [then_triton(dim1, lambda r, offs: [r[0], q.triton_mx_block_rearrange_2d_K_groups(r[1], offs // 32)],
                           "dim1 reference (compiled) + triton_mx_block_rearrange_2d_K_groups"),
               peers._ref_peer("dim1 reference + torch_to_blocked_2d_K_groups",
                               lambda x, offs: (lambda r: [r[0], q.torch_to_blocked_2d_K_groups(r[1], offs // 32)[0]])(
                                   dim1(x)))]
    w0_peers = [then_triton(dim0, lambda r: [r[0], q.triton_mx_block_rearrange_per_group_3d(r[1])],
                            "dim0 to_mx (compiled) + triton_mx_block_rearrange_per_group_3d"),
                peers._ref_peer("to_mx + torch_to_blocked_per_group_3d",
                                lambda w: (lambda r: [r[0], q.torch_to_blocked_per_group_3d(r[1])])(dim0(w)))]
    w1_peers = [peers._torch_peer("_mxfp8_quantize_reference_3d", ref3d)]
    sh = f"{a.M}x{a.K}x{a.N} E={a.E}"
    return [
        peers.Case("fwd: A dim0, M-group blocked scales", sh, tok(a.M, a.K), mgroups, m_peers),
        peers.Case("fwd: W (E,N,K) dim0, per-expert blocked", sh, weights, w_dim0, w0_peers),
        peers.Case("dgrad: grad_out dim0, M-group blocked", sh, tok(a.M, a.N), mgroups, m_peers),
        peers.Case("dgrad: W 3-D along N, per-expert blocked", sh, weights, lambda w: list(mxt.mxfp8_quantize_3d(w)),
                   w1_peers),
        peers.Case("wgrad: grad_out dim1, K-group blocked", sh, tok(a.M, a.N), kgroups, k_peers),
        peers.Case("wgrad: A dim1, K-group blocked", sh, tok(a.M, a.K), kgroups, k_peers),
    ]


def mxfp8_casts(a, device, say) -> List[list]:
    """Times and checks the MXFP8 casts of one step; says the table; returns its rows."""
    import peers  # noqa: PLC0415

    if a.M % 32:
        say(f"--mxfp8-casts: M={a.M} must be a multiple of 32 (MXFP8 token groups)")
        return []
    cuda = torch.device(device).type == "cuda"
    args = argparse.Namespace(warmup=a.warmup, iters=max(a.steps, 20), no_compile=not cuda)
    rows, skips, mx_sum, ao_sum = [], {}, 0.0, 0.0
    for c in mxfp8_cast_cases(a):
        for r in peers.run_case(c, args, device, skips):
            rows.append(r)
        fastest = [r.peer_us for r in rows if r.op == c.op and r.peer_us]
        mx_sum += next((r.mx_us for r in rows if r.op == c.op and r.mx_us), 0.0)
        ao_sum += min(fastest) if fastest else 0.0
    say(bu.table([r.cells() for r in rows], peers.HEADERS))
    for (name, why), where in skips.items():
        say(f"skip: {name}: {why}")
    if cuda:
        say(f"MXFP8 casts per step: mxjit {mx_sum / 1000:.3f} ms, torchao's fastest Hopper path per cast "
            f"{ao_sum / 1000:.3f} ms ({ao_sum / mx_sum if mx_sum else float('nan'):.2f}x)")
    return rows


# ---- main ----

def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parse_args(argv)
    if not torch.cuda.is_available():
        print("moe_step.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist = None
    if world > 1:
        import torch.distributed as dist  # noqa: PLC0415

        dist.init_process_group("nccl", device_id=device)

    def say(text: str) -> None:  # ranks print as they go, each line tagged with its rank
        prefix = f"[rank {rank}] " if world > 1 else ""
        print("\n".join(prefix + line for line in str(text).splitlines()), flush=True)

    t0 = time.perf_counter()
    p = torch.cuda.get_device_properties(local)
    say(f"== MoE step on {p.name} (sm_{p.major}{p.minor}), rank {rank}/{world}, torch {torch.__version__} ==")
    say(f"layer: A {a.M}x{a.K}, B_t ({a.E}, {a.K}, {a.N}) column-major, groups "
        f"{'uniform' if a.uniform else f'jagged multiples of {a.multiple}, group 1 empty'}")
    if a.mxfp8_casts:
        mxfp8_casts(a, device, say)
    else:
        why = probe_scaled_grouped_mm(device)
        say(f"torch._scaled_grouped_mm on this GPU: {'runs (checked against a float matmul)' if not why else 'NO: ' + why}")
        say(f"bf16 grouped GEMM: {grouped_mm_bf16_kind()}")
        say("mxjit casts: " + "; ".join(fc.MXJIT_NOTES))
        x, b_t, offs, grad_out = make_layer(a, device, rank)
        say(f"offs: {offs.tolist()}")
        modes = [m for m in a.modes if not (why and m != "bf16")]
        if not a.no_check and not why:
            say(bu.table(cast_checks(x, b_t, offs, grad_out),
                         ["cast", "mxjit vs torchao Triton", "mxjit vs torch reference", "mxjit strides"]))
            order = [m for m in ("torchao", "torchao-casts", "bf16", "mxjit") if m in a.modes or m == "torchao-casts"]
            say(bu.table(compare_steps(x, b_t, offs, grad_out, order),
                         ["mode", "out, grad_A, grad_B vs reference-cast step", "max rel. L2 error"]))
        results, piped = {}, {}
        for mode in modes:
            fn = layer_fn(mode)
            t = time.perf_counter()
            run_step(fn, x, b_t, offs, grad_out)
            torch.cuda.synchronize()
            first = time.perf_counter() - t
            results[mode] = time_steps(fn, x, b_t, offs, grad_out, a.steps, a.warmup)
            piped[mode] = time_pipelined(fn, x, b_t, offs, grad_out, a.steps, a.warmup)
            say(f"  {mode}: {results[mode]:.3f} ms per step, {piped[mode]:.3f} back to back (first step {first:.2f} s)")
        rows = []
        shares = {}
        if a.profile:
            for mode in modes:
                if mode == "bf16":
                    continue
                share, total, kernels, gaps = profile_share(layer_fn(mode), x, b_t, offs, grad_out)
                shares[mode] = share
                say(f"profile {mode}: casts {100 * share:.1f}% of {total / 1000:.3f} ms GPU time per step")
                for n, us, c in kernels[:12]:
                    say(f"    {'cast ' if c else '     '}{us:9.1f} us  {n[:110]}")
                say(f"  GPU idle between kernels: {sum(g[0] for g in gaps) / 3 / 1000:.3f} ms per step; longest:")
                for us, before, after in gaps[:6]:
                    say(f"    {us:9.1f} us  after {before[:50]}  before {after[:50]}")
                say(f"  host time to enqueue a step: {host_ms(layer_fn(mode), x, b_t, offs, grad_out, 10):.3f} ms")
        for mode in modes:
            sp = results.get("torchao", float("nan")) / results[mode]
            vs_bf16 = results.get("bf16", float("nan")) / results[mode]
            sp_p = piped.get("torchao", float("nan")) / piped[mode]
            vs_bf16_p = piped.get("bf16", float("nan")) / piped[mode]
            rows.append([mode, f"{results[mode]:.3f}", f"{piped[mode]:.3f}",
                         f"{100 * shares[mode]:.1f}" if mode in shares else "", f"{sp:.2f} / {sp_p:.2f}",
                         f"{vs_bf16:.2f} / {vs_bf16_p:.2f}"])
        say(bu.table(rows, ["mode", "ms per step", "back to back", "casts % of GPU time", "torchao FP8 / mode",
                            "bf16 / mode"]))
        if dist is not None:  # data-parallel: average the weight gradient, as a DP step would
            run_step(layer_fn("mxjit" if "mxjit" in modes else modes[0]), x, b_t, offs, grad_out)
            g = b_t.grad.float().contiguous()  # B_t's gradient is column-major; NCCL reduces contiguous tensors
            dist.all_reduce(g)
            say(f"all-reduced grad_B over {world} ranks: finite={bool(torch.isfinite(g).all())}")
    import mxjit  # noqa: PLC0415

    st = mxjit.cache_stats()
    say(f"mxjit kernel cache in this process: {st['compiles']} NVRTC compiles, {st['disk_hits']} SQLite hits "
        f"(with several ranks on one host each kernel should be compiled by one of them)")
    say(f"rank {rank} done in {time.perf_counter() - t0:.1f} s")
    if dist is not None:
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
