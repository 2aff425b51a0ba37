"""Shared pieces of the Python benchmarks (peers.py, moe_step.py): GPU timing by CUDA events, the
device copy bandwidth of a given byte count, byte-for-byte comparison of outputs, and a text table.

Nothing here needs a GPU to import; the timing functions do.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

import torch


# GPU cycles the stream sleeps before a timed loop (~50 ms at 2 GHz): the host enqueues every call meanwhile, so the
# events measure the GPU's time per call, not the host's launch cost of a small op.
_HEAD_START_CYCLES = 100_000_000


def gpu_time_us(fn: Callable, inputs: Sequence[tuple], warmup: int = 5, iters: int = 50) -> float:
    """Median GPU microseconds of one ``fn(*args)``: CUDA events around each call, back to back on the
    current stream behind a sleep kernel (the host enqueues all calls ahead), cycling over ``inputs``
    (argument tuples whose data together exceed the L2 so that no call reads what the previous one left
    in it)."""
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    torch.cuda._sleep(_HEAD_START_CYCLES)
    for i in range(iters):
        args = inputs[i % len(inputs)]
        starts[i].record()
        fn(*args)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))


def rotation_count(nbytes: int, device, cap: int = 8) -> int:
    """How many distinct inputs of ``nbytes`` to cycle over so that together they exceed twice the L2."""
    if torch.device(device).type != "cuda":
        return 1
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    return max(1, min(cap, -(-2 * l2 // max(1, nbytes))))


def copy_time_us(traffic_bytes: int, device, warmup: int = 5, iters: int = 50) -> float:
    """Median microseconds of a device-to-device copy moving ``traffic_bytes`` in total (half read, half
    written): the roofline an op reading R and writing W bytes is measured against (R + W = traffic)."""
    half = max(16, traffic_bytes // 2)
    n = rotation_count(half, device)
    pairs = [(torch.empty(half, dtype=torch.uint8, device=device), torch.empty(half, dtype=torch.uint8, device=device))
             for _ in range(n)]
    for src, _ in pairs:
        src.fill_(1)
    return gpu_time_us(lambda d, s: d.copy_(s), [(d, s) for s, d in pairs], warmup, iters)


def tensor_bytes(ts) -> int:
    """Bytes of the logical elements of the tensors in ``ts`` (what an op reads or writes)."""
    return sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """The logical elements of ``t`` in row-major order as a flat uint8 tensor (any dtype, any strides)."""
    flat = t.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8)


@dataclass
class Diff:
    """Result of comparing two lists of outputs byte for byte."""
    differing: int          # bytes that differ (over the outputs that could be compared)
    total: int              # bytes compared
    mismatch: str = ""      # why some outputs could not be compared (count or size differs), "" if all could

    @property
    def equal(self) -> bool:
        return self.differing == 0 and not self.mismatch


def byte_diff(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor]) -> Diff:
    """Compares two lists of outputs element byte by element byte, in logical (row-major) order.
    Outputs whose byte counts differ are not compared and named in ``mismatch`` (shapes may differ where
    two libraries give the same bytes different shapes, e.g. (M, K/32) and (M, K/32, 1))."""
    if len(got) != len(want):
        return Diff(0, 0, f"{len(got)} outputs against {len(want)}")
    differing = total = 0
    bad = []
    for i, (g, w) in enumerate(zip(got, want)):
        gb, wb = as_bytes(g), as_bytes(w.to(g.device))
        if gb.numel() != wb.numel():
            bad.append(f"output {i}: {tuple(g.shape)} {g.dtype} vs {tuple(w.shape)} {w.dtype}")
            continue
        differing += int((gb != wb).sum())
        total += gb.numel()
    return Diff(differing, total, "; ".join(bad))


def describe(d: Diff, known: str = "") -> str:
    """'yes', or the count of differing bytes with the known reason (``known``) when there is one."""
    if d.mismatch:
        return f"NOT COMPARED ({d.mismatch})"
    if d.differing == 0:
        return "yes"
    why = f" ({known})" if known else " (UNEXPECTED)"
    return f"{d.differing}/{d.total} bytes differ{why}"


def table(rows: Sequence[Sequence], headers: Sequence[str]) -> str:
    """A plain text table: columns as wide as their widest cell, numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [[("" if c is None else str(c)) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(r, is_row):
        out = []
        for i, c in enumerate(r):
            numeric = is_row and c.replace(".", "", 1).replace("-", "", 1).isdigit()
            out.append(c.rjust(widths[i]) if numeric else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [fmt(cells[0], False), "  ".join("-" * w for w in widths)]
    lines += [fmt(r, True) for r in cells[1:]]
    return "\n".join(lines)
