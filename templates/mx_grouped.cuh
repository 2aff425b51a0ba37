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
template <bool BY_ROWS>
MX_D mx_i64 mx_grouped_blocked_offset(const int* ends, mx_i64 es, mx_i64 G, mx_i64 blk, mx_i64 ext, mx_i64 r,
                                      mx_i64 c, mx_i64 R, mx_i64 C) {
  constexpr mx_i64 U = BY_ROWS ? 128 : 4;  // the padding unit along the grouped axis
  const mx_i64 i = BY_ROWS ? r : c;        // the scale coordinate along the grouped axis
  mx_i64 lo = 0, start = 0, pad = 0;       // clamped end (domain units), s_h, padded start of h
  for (mx_i64 h = 0; h < G; ++h) {
    mx_i64 e = mx_i64(ends[h * es]);
    e = e < lo ? lo : (e > ext ? ext : e);
    lo = e;
    const mx_i64 end = (e + blk - 1) / blk;
    if (i < end) {
      if (BY_ROWS) return mx_blocked_offset<128, 4>(0, pad + (r - start), c, 0, (C + 3) / 4 * 4);
      return pad * ((R + 127) / 128 * 128) + mx_blocked_offset<128, 4>(0, r, c - start, 0, (end - start + 3) / 4 * 4);
    }
    pad += (end - start + U - 1) / U * U;
    start = end;
  }
  return -1;
}
