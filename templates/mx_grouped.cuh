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
// blocked(r, c; Cp) is mx_blocked_offset<128, 4>(0, r, c, -, Cp). Padding bytes are zeroed by the
// launcher before the kernel runs (cuMemsetD8Async), so kernels write real scales only, except
// where the kernel writes them itself: the direct kernel's token groups (mx_grouped_rows_pad
// below) and the columns kernel's K groups (mx_grouped_cols_pad).
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

// One pass of the warp over groups h0 .. h0 + 31 (lane h0 + lane; lanes past G repeat the last
// end), in the walk's terms: e the lane's end, clamped into [previous end, ext] (a prefix max from
// `lo`, the end before h0, then the clamp; the same as the walk's sequential clamp, since
// min(max(a, min(b, ext)), ext) = min(max(a, b), ext)), [start, end) its scale range (ceil(./blk)
// of the previous end and of e), n = roundup(end - start, U) its padded width, incl the sum of n
// over lanes 0 .. lane; lo the pass's last end (lane 31's e, the next pass's `lo`) and last its
// scale end. Every lane of the warp calls it, converged; 32 bits throughout (e <= ext).
struct MxGroupPass {
  int e, start, end, n, incl, lo, last;
};
MX_D int mx_ceil_div(int a, int b) { return a / b + (a % b != 0); }  // a >= 0, b > 0; no overflow near 2^31
template <int U>
MX_D MxGroupPass mx_group_pass(const int* ends, mx_i64 es, int G, int ext, int blk, int h0, int lo, int lane) {
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
  const int start = mx_ceil_div(prev, blk), end = mx_ceil_div(e, blk);
  const int n = (end - start + U - 1) / U * U;
  int incl = n;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int o = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += o;
  }
  const int next_lo = __shfl_sync(0xffffffffu, e, 31);
  return {e, start, end, n, incl, next_lo, mx_ceil_div(next_lo, blk)};
}

// The lane of a pass whose group holds scale coordinate i: how many lanes end at or before i
// (0 .. 32; 32 when i lies past the pass), by a binary search over the lanes (the ends do not
// decrease). Every lane of the warp calls it, converged, each with its own i.
MX_D int mx_group_lane(const MxGroupPass& g, int i) {
  int pos = 0;
#pragma unroll
  for (int s = 16; s > 0; s /= 2) {
    const int v = __shfl_sync(0xffffffffu, g.end, pos + s - 1);
    if (v <= i) pos += s;
  }
  return pos == 31 && g.last <= i ? 32 : pos;
}

// The groups of columns c0 .. c0 + n - 1 (n <= 32) of grouped_blocked_128x4 by columns (K groups;
// `blk` domain elements per scale column), as the cursors the walk above would leave: t[l] for
// column c0 + l, or an empty range past the last end (where the walk then answers -1); and in
// t[n].pad the padded width of all groups, Q_G (where the buffer's unused tail starts, Q_G * Rp).
// Found by the warp together, 32 groups a pass (mx_group_pass with U = 4 in scale units). The
// columns kernel's warp 0 fills its tile's table right after issuing its loads, so that no thread
// walks the ends after the tile's barrier. Every lane calls it, converged.
MX_D void mx_grouped_cols_table(MxGroupCursor* t, int n, const int* ends, mx_i64 es, mx_i64 G64, mx_i64 blk64,
                                mx_i64 ext64, mx_i64 c0) {
  const int lane = int(threadIdx.x & 31u), G = int(G64), blk = int(blk64), ext = int(ext64);
  const int c = int(c0) + lane % n;
  int lo = 0;  // carried over passes: the last clamped end
  mx_i64 pad = 0;
  MxGroupCursor found;
  bool done = false;
  for (int h0 = 0; h0 < G; h0 += 32) {
    const MxGroupPass g = mx_group_pass<4>(ends, es, G, ext, blk, h0, lo, lane);
    const int pos = mx_group_lane(g, c);
    const int fs = __shfl_sync(0xffffffffu, g.start, pos & 31), fe = __shfl_sync(0xffffffffu, g.end, pos & 31);
    const int fp = __shfl_sync(0xffffffffu, g.incl - g.n, pos & 31);
    if (!done && pos < 32 && h0 + pos < G) done = true, found.s = fs, found.e = fe, found.pad = pad + fp;
    lo = g.lo;
    pad += __shfl_sync(0xffffffffu, g.incl, 31);
  }
  if (lane < n) t[lane] = found;
  if (lane == 0) t[n] = MxGroupCursor{0, 0, pad};
}

// The padding of grouped_blocked_128x4 by columns (K groups; R x C scales, Rp = roundup(R, 128))
// that one tile of the columns kernel owns, written as zeros by its warp 0 right after the tile's
// table t (mx_grouped_cols_table; scale columns c0 .. c0 + n - 1, layout rows r0 .. r0 + nr - 1),
// while the tile's loads are in flight, so that the launcher need not clear the buffer first:
//   - a group's last column c (c + 1 == e) zeroes, in each of the tile's rows, the bytes of the
//     group's padding columns up to its padded width (the rest of c's 4-byte word);
//   - a tile past row R zeroes rows R .. Rp - 1 of its stored columns (the stores skip them);
//   - the buffer past all groups' bands, from Q_G * Rp (t[n].pad) to the bound Rp (Cp + 4 G)
//     (BoundLayout::size_bound), is split over the grid's CTAs, 16-byte lines (the at most 15 bytes
//     at each end by CTA 0), so a CTA past the tail's last line stores nothing.
// The real scales' bytes are stored after the tile's barrier by other threads: distinct bytes.
// Before the barrier this costs nothing; after it, it did (docs/perf-log.md#grouped-cols-pad).
// Every lane of warp 0 calls it, converged.
MX_D void mx_grouped_cols_pad(mx_u8* out, const MxGroupCursor* t, int n, mx_i64 c0, mx_i64 r0, int nr, mx_i64 R,
                              mx_i64 C, mx_i64 G) {
  __syncwarp();  // t[] was written by the lanes of this warp
  const int lane = int(threadIdx.x & 31u);
  const mx_i64 Rp = (R + 127) / 128 * 128, rend = r0 + nr < Rp ? r0 + nr : Rp;
  for (int l = 0; l < n; ++l) {
    const MxGroupCursor g = t[l];
    const mx_i64 c = c0 + l, k = c - g.s;
    if (c >= C || c < g.s || c >= g.e) continue;           // stored nowhere: past the extent or the last end
    const int kpad = c + 1 == g.e ? int(3 - (k & 3)) : 0;  // the group's padding columns after c
    const mx_i64 from = kpad > 0 ? r0 : (R > r0 ? R : r0), Cg = (g.e - g.s + 3) / 4 * 4;
    for (mx_i64 r = from + lane; r < rend; r += 32) {
      mx_u8* const p = out + g.pad * Rp + mx_blocked_offset<128, 4>(0, r, k, 0, Cg);
      if (r >= R) p[0] = 0;
      for (int z = 1; z <= kpad; ++z) p[z] = 0;
    }
  }
  const mx_i64 lo = t[n].pad * Rp, hi = Rp * ((C + 3) / 4 * 4 + 4 * G);
  if (lo >= hi) return;
  const mx_i64 base = mx_i64(reinterpret_cast<mx_u64>(out) & 15u);  // lines start where base + i is a multiple of 16
  mx_i64 a = (base + lo + 15) / 16 * 16 - base, b = (base + hi) / 16 * 16 - base;
  if (a > hi) a = hi;
  if (b < a) b = a;
  const mx_i64 cta = blockIdx.x + mx_i64(gridDim.x) * (blockIdx.y + mx_i64(gridDim.y) * blockIdx.z);
  const mx_i64 ctas = mx_i64(gridDim.x) * gridDim.y * gridDim.z;
  if (cta == 0 && lane < a - lo) out[lo + lane] = 0;
  if (cta == 0 && lane < hi - b) out[b + lane] = 0;
  for (mx_i64 i = cta * 32 + lane; i < (b - a) / 16; i += ctas * 32)
    *reinterpret_cast<uint4*>(out + a + 16 * i) = make_uint4(0u, 0u, 0u, 0u);
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
    const MxGroupPass g = mx_group_pass<128>(ends, es, G, ext, 1, h0, lo, lane);
    const int pos = mx_group_lane(g, r);
    const int start = __shfl_sync(0xffffffffu, g.start, pos & 31);
    const int p = pad + __shfl_sync(0xffffffffu, g.incl - g.n, pos & 31);
    if (placed < 0 && pos < 32 && h0 + pos < G) placed = p + (r - start);
    lo = g.lo;
    pad += __shfl_sync(0xffffffffu, g.incl, 31);
  }
  return placed;
}

// Stores the scale bytes of columns c .. c + n - 1 (c % 4 == 0, n <= 4) of 4 scale rows in
// grouped_blocked_128x4 by rows (Cp = roundup(C, 4)): p[u] row u's padded row (-1: not stored),
// word u of `words` (x, y, z, w) its bytes (column c in the low byte). Where a group holds rows r, r+32, r+64, r+96 of
// one 128-row block (the direct kernel's row_step 32), their padded rows p, p+32, p+64, p+96 fill one 16-byte atom line
// when p % 128 < 32, stored at once as plain blocked scales are; else one word a row (n = 4) or its bytes. The lines
// and words of the buffer's padding columns are the padding pass's (mx_grouped_rows_pad), so n < 4 stores only real
// bytes.
//   line of rows p, p+32, p+64, p+96:  [ w[0] | w[1] | w[2] | w[3] ]   (4 columns each)
MX_D void mx_grouped_rows_store4(mx_u8* out, const int* p, int c, int n, int Cp, mx_v16 words) {
  const mx_u32 w[4] = {words.x, words.y, words.z, words.w};
  if (n == 4 && p[0] >= 0 && p[1] == p[0] + 32 && p[2] == p[0] + 64 && p[3] == p[0] + 96 && (p[0] & 127) < 32) {
    mx_u8* const q = out + mx_blocked_offset<128, 4>(0, p[0], c, 0, Cp);
    if ((reinterpret_cast<mx_u64>(q) & 15u) == 0) *reinterpret_cast<uint4*>(q) = make_uint4(w[0], w[1], w[2], w[3]);
    else
      for (int e = 0; e < 16; ++e) q[e] = mx_u8(w[e / 4] >> (8 * (e % 4)));
    return;
  }
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    if (p[u] < 0) continue;
    mx_u8* const q = out + mx_blocked_offset<128, 4>(0, p[u], c, 0, Cp);
    if (n == 4 && (reinterpret_cast<mx_u64>(q) & 3u) == 0) *reinterpret_cast<mx_u32*>(q) = w[u];
    else
      for (int e = 0; e < n; ++e) q[e] = mx_u8(w[u] >> (8 * e));
  }
}

// The padding of grouped_blocked_128x4 by rows with one scale per domain row (R = ext scale rows,
// C columns, the buffer's bound of roundup(R, 128) + 128 G rows), written as zeros by every warp of
// the grid together, so the launcher need not clear the buffer first. Each group's padded rows
// start at a multiple of 128, so each 128-row band of storage (128 Cp bytes, one 128x4 tile per
// 4 columns) lies in one group: its first k rows are real (k = 128 for a band inside a group, 0 past
// the last group's end), the rest padding. A band's warp finds k as mx_grouped_rows_place finds a
// row (ends clamped the same way, 32 groups a pass) and zeroes the 16-byte lines of padding rows;
// of a real row it zeroes only the bytes of columns C .. Cp - 1 (the kernel's stores write the
// others). Every lane of a warp calls it, converged; all in 32 bits under the same launch bound.
//
//   a tile's 16-byte line L holds rows L, L+32, L+64, L+96 (4 columns each):
//     line L: [ row L | row L+32 | row L+64 | row L+96 ]  a word is padding where its row >= k
MX_D void mx_grouped_rows_pad(mx_u8* out, const int* ends, mx_i64 es, mx_i64 G64, mx_i64 ext64, mx_i64 C64) {
  const int lane = int(threadIdx.x & 31u), G = int(G64), ext = int(ext64), C = int(C64), Cp = (C + 3) & ~3;
  const int bands = (ext + 127) / 128 + G;
  const unsigned cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned warps = gridDim.x * gridDim.y * gridDim.z * (blockDim.x / 32u);
#pragma unroll 1
  for (unsigned band = cta * (blockDim.x / 32u) + threadIdx.x / 32u; band < unsigned(bands); band += warps) {
    const int b0 = int(band) * 128;
    int lo = 0, pad = 0, k = 0;  // carried over passes: the last clamped end, its padded start
    for (int h0 = 0; h0 < G; h0 += 32) {
      const MxGroupPass g = mx_group_pass<128>(ends, es, G, ext, 1, h0, lo, lane);
      const int start = pad + g.incl - g.n;  // this lane's group's padded start
      const unsigned mine = __ballot_sync(0xffffffffu, h0 + lane < G && start <= b0 && b0 < start + g.n);
      if (mine) {
        const int src = __ffs(mine) - 1;
        const int real = __shfl_sync(0xffffffffu, g.end - g.start, src) - (b0 - __shfl_sync(0xffffffffu, start, src));
        k = real < 128 ? real : 128;
        break;
      }
      lo = g.lo;
      pad += __shfl_sync(0xffffffffu, g.incl, 31);
    }
    if (k == 128 && C == Cp) continue;  // a band of real rows and no column padding
    mx_u8* const base = out + mx_i64(b0) * Cp;
    const unsigned al = unsigned(reinterpret_cast<mx_u64>(out) & 15u);  // the buffer's start: any address
    // The band's 16-byte lines: Cp / 4 tiles of 32 (of a band of real rows, the last tile's only).
#pragma unroll 1
    for (int i = (k == 128 ? 8 * Cp - 32 : 0) + lane; i < 8 * Cp; i += 32) {
      const int L = i & 31, tc = i >> 5;
      mx_u8* const line = base + mx_i64(i) * 16;
      if (L >= k && al == 0u) {
        *reinterpret_cast<uint4*>(line) = make_uint4(0u, 0u, 0u, 0u);
        continue;
      }
#pragma unroll 1
      for (int j = 0; j < 4; ++j) {
        // Columns from c0 on of row L + 32 j: all four of a padding row, those past C of a real one.
        const int c0 = L + 32 * j >= k ? 0 : (tc == Cp / 4 - 1 ? (C & 3) : 0);
        if (L + 32 * j < k && c0 == 0) continue;
        if (c0 == 0 && (al & 3u) == 0u) *reinterpret_cast<mx_u32*>(line + 4 * j) = 0u;
        else
          for (int c = c0; c < 4; ++c) line[4 * j + c] = 0;
      }
    }
  }
}
