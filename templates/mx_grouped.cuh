// mxjit grouped scale layouts: the device side of Layout::grouped_blocked_128x4. Included (after
// prelude.cuh) only by kernels that write a grouped scale layout.
// Offset of scale (r, c) of an R x C scale matrix in grouped_blocked_128x4 (dsl/layout.hpp), or
// -1 for a scale past the last group end (not stored). Groups split the rows (BY_ROWS) or the
// columns; their ends are read here, on the device (no host synchronisation): ends[h * es] for
// h < G, cumulative, in domain units along the grouped axis of extent `ext`, `blk` domain
// elements per scale along it (1 for the rows axis). In scale units e_h = ceil(end_h / blk), and
// group h holds s_h = e_{h-1} .. e_h - 1 (e_{-1} = 0). The ends are not validated on the device:
// each is clamped into [previous end, ext], so even bad ends never index past the buffer's
// host-side bound. Every group is a complete 128x4-blocked matrix at a padded start, which a
// linear walk over the groups accumulates (any G, empty groups; g + 1 reads of `ends`, which
// stay in L1, for a scale of group g):
//
//   BY_ROWS (token groups):                     columns groups (K groups):
//     P_h = sum_{j<h} roundup(n_j, 128)           Q_h = sum_{j<h} roundup(n_j, 4), Rp = roundup(R, 128)
//     p = P_g + (r - s_g), Cp = roundup(C, 4)     k = c - s_g, Cg = roundup(n_g, 4)
//     off = blocked(p, c; Cp)                     off = Q_g * Rp + blocked(r, k; Cg)
//
//      scale rows         storage rows               scale columns     storage (column bands)
//     +----------+ 0     +----------+ P_0 = 0        0     s_1  s_2    Q_0*Rp  Q_1*Rp   Q_2*Rp
//     | group 0  |       | group 0  |               +-----+----+---+  +-------+-------+------+
//     +----------+ s_1   |  (pad 0) |               | g 0 |g 1 |g 2|  | g 0   | g 1   | g 2  |
//     | group 1  |       +----------+ P_1 (128k)    |     |    |   |  | Rp x  | Rp x  | ...  |
//     +----------+ s_2   | group 1  |               +-----+----+---+  | Cg_0  | Cg_1  |      |
//     | (no grp) |       |  (pad 0) |                                 +-------+-------+------+
//     +----------+ R     +----------+ P_2
//
// blocked(r, c; Cp) is mx_blocked_offset<128, 4>(0, r, c, -, Cp); padding bytes are zeroed by the
// launcher before the kernel runs (cuMemsetD8Async), so kernels write real scales only.
//
// A thread's scales mostly fall in one group (a tile spans few), so the group found last is kept
// in a cursor and the walk runs again only for a coordinate outside it. The group the walk finds
// for i is the first h with i < e_h, whose start s_h = e_{h-1} <= i: exactly the cursor's range.
struct MxGroupCursor {
  mx_i64 s = 0, e = 0, pad = 0;  // the group's scale range [s, e) along the grouped axis (empty at first), padded start
};
template <bool BY_ROWS>
MX_D mx_i64 mx_grouped_blocked_offset(MxGroupCursor& cur, const int* ends, mx_i64 es, mx_i64 G, mx_i64 blk, mx_i64 ext,
                                      mx_i64 r, mx_i64 c, mx_i64 R, mx_i64 C) {
  constexpr mx_i64 U = BY_ROWS ? 128 : 4;  // the padding unit along the grouped axis
  const mx_i64 i = BY_ROWS ? r : c;        // the scale coordinate along the grouped axis
  if (i < cur.s || i >= cur.e) {
    mx_i64 lo = 0, start = 0, pad = 0;  // clamped end (domain units), s_h, padded start of h
    mx_i64 h = 0;
    for (; h < G; ++h) {
      mx_i64 e = mx_i64(ends[h * es]);
      e = e < lo ? lo : (e > ext ? ext : e);
      lo = e;
      const mx_i64 end = (e + blk - 1) / blk;
      if (i < end) {
        cur.s = start, cur.e = end, cur.pad = pad;
        break;
      }
      pad += (end - start + U - 1) / U * U;
      start = end;
    }
    if (h == G) return -1;
  }
  if (BY_ROWS) return mx_blocked_offset<128, 4>(0, cur.pad + (r - cur.s), c, 0, (C + 3) / 4 * 4);
  return cur.pad * ((R + 127) / 128 * 128) + mx_blocked_offset<128, 4>(0, r, c - cur.s, 0, (cur.e - cur.s + 3) / 4 * 4);
}

// The padded row of scale row r in grouped_blocked_128x4 by rows with one scale per domain row
// (blk = 1): pad_g + (r - s_g) for the group g holding r, or -1 past the last end; the walk's
// answer above (ends clamped into [previous end, ext]) found by the warp together, 32 groups at a
// time: lane h holds e_h (a prefix max of the ends, then clamped) and the padded start P_h (a
// prefix sum of roundup(n_j, 128)); each lane finds its own r's group by a binary search over the
// lanes (the e_h do not decrease). Every lane of the warp calls it, converged. All in 32 bits,
// half the shuffles of 64-bit lanes (docs/perf-log.md, sixteenth session): the direct kernel's
// launch (Plan::launch) keeps ext + 128 G, hence every padded row, below 2^31.
MX_D mx_i64 mx_grouped_rows_place(const int* ends, mx_i64 es, mx_i64 G64, mx_i64 ext64, mx_i64 r64) {
  const int lane = int(threadIdx.x & 31u), G = int(G64), ext = int(ext64), r = int(r64);
  int lo = 0, pad = 0, placed = -1;  // carried over chunks: the last clamped end, its padded start
  for (int h0 = 0; h0 < G; h0 += 32) {
    int e = h0 + lane < G ? ends[mx_i64(h0 + lane) * es] : lo;
    e = e > lo ? e : lo;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int o = __shfl_up_sync(0xffffffffu, e, d);
      if (lane >= d && o > e) e = o;
    }
    e = e < ext ? e : ext;
    int prev = __shfl_up_sync(0xffffffffu, e, 1);
    if (lane == 0) prev = lo;
    const int n = (e - prev + 127) & ~127;
    int incl = n;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int o = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += o;
    }
    // pos: how many of this chunk's lanes end at or before r (lanes past G end at the last end).
    int pos = 0;
#pragma unroll
    for (int s = 16; s > 0; s /= 2) {
      const int v = __shfl_sync(0xffffffffu, e, pos + s - 1);
      if (v <= r) pos += s;
    }
    const int last = __shfl_sync(0xffffffffu, e, 31);
    if (pos == 31 && last <= r) pos = 32;
    const int start = __shfl_sync(0xffffffffu, prev, pos & 31);
    const int p = pad + __shfl_sync(0xffffffffu, incl - n, pos & 31);
    if (placed < 0 && pos < 32 && h0 + pos < G) placed = p + (r - start);
    lo = last;
    pad += __shfl_sync(0xffffffffu, incl, 31);
  }
  return placed;
}
