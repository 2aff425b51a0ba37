// The named layouts, each a definition in the layout algebra (dsl/layout.hpp). For scale
// layouts, r is the scale matrix's rows axis (the innermost non-block axis: the GEMM's M or N)
// and c its columns (the block axis: K); * is every other axis (batch, experts), outermost.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/layout.hpp"

namespace mxjit {

using layout::cols;
using layout::rest;
using layout::rows;
using layout::axis;

/// Row-major, column-major and per-expert column-major for any rank.
Layout Layout::row_major() { return modes({rest}); }
Layout Layout::col_major() { return modes({~rest}); }
Layout Layout::expert_col_major() { return modes({axis(0), ~rest}); }

Layout Layout::permuted(std::vector<int> order) {
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != int(i))
      throw UsageError(fmt::format("layout::permuted({}): the order must be a permutation of 0..{}",
                                   fmt::join(order, ","), int(order.size()) - 1));
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity &= order[i] == int(i);
  if (identity) return row_major();  // one spelling per layout
  std::vector<Mode> m;
  for (int a : order) m.emplace_back(axis(a));
  return modes(std::move(m));
}

/// blocked128x4: the cuBLAS/CUTLASS block-scaled GEMM scale layout (CUTLASS's SfKMajorAtom
/// ((32,4),(SFVec,4)):((16,4),(0,1)) tiled K-major). Rows pad to Rp = roundup(R,128), columns to
/// Cp = roundup(C,4); each 128x4 tile is one 512-byte atom in which r%32 picks a 16-byte line
/// and r/32%4 a 4-byte group:
///
///     off = ((r/128)*(Cp/4) + c/4)*512 + (r%32)*16 + (r%128)/32*4 + c%4   (+ b*Rp*Cp per batch)
///
///        atom (128 rows x 4 cols)          bytes of one 16-byte line (r%32 fixed)
///     rows  0..31  -> group 0              | r     c0..c3 | r+32 c0..c3 | r+64 .. | r+96 .. |
///     rows 32..63  -> group 1
///     rows 64..95  -> group 2
///     rows 96..127 -> group 3
///
/// A dim1 cast's scales (blocks along axis 0) get the MN-major variant, the atom on the
/// transposed scale matrix, for free: r and c follow the block axis.
Layout Layout::blocked_128x4() { return modes({rest, rows / 128, cols / 4, rows % 32, rows / 32 % 4, cols % 4}); }

/// blocked8x4: 8x4 atoms of 32 bytes, (r%8)*4 + c%4 within the atom.
Layout Layout::blocked_8x4() { return modes({rest, rows / 8, cols / 4, rows % 8, cols % 4}); }

/// grouped_blocked128x4(axis, offs): per-group blocked scales for grouped GEMMs (MoE). The scale
/// tensor [R, C] (rank 2) is split into G groups along its rows or its columns by the int32
/// device array `offs` of cumulative group ENDS (torch's `offs`), given in domain units along
/// domain axis `axis` and turned into scale units by the block size along that axis (1 for the
/// rows axis; a group end on a blocked axis must be a multiple of the block size or the extent,
/// see scale_group_ends in dsl/geometry.hpp). With scale-unit ends e_0 <= ... <= e_{G-1}, group
/// g holds s_g = e_{g-1} .. e_g - 1 (e_{-1} = 0); n_g = e_g - s_g may be 0. Each group is one
/// complete 128x4-blocked tensor of its own, at a padded start (Layout::groups):
///
///   token groups along the rows (e.g. dim0 casts of MoE activations):
///     P_g = sum_{h<g} roundup(n_h, 128)            first padded row of group g
///     off = P_g*Cp + blocked(r - s_g, c),          Cp = roundup(C, 4)
///
///          scale rows (logical)             storage (padded rows, 128 per atom row)
///          +---------+ s_0 = 0              +---------+ P_0 = 0
///          | group 0 |  n_0 = 130           | group 0 |  rows 0..129
///          +---------+ s_1 = 130            |  (pad)  |  rows 130..255 zero
///          | group 1 |  n_1 = 0 (empty)     +---------+ P_1 = P_2 = 256
///          +---------+ s_2 = 130            | group 2 |  rows 256..260
///          | group 2 |  n_2 = 5             |  (pad)  |  rows 261..383 zero
///          +---------+ e_2 = 135            +---------+ 384 = sum of roundup(n_h, 128)
///
///   groups along the columns (e.g. a weight-gradient cast whose scale columns split by K-groups):
///     Q_g = sum_{h<g} roundup(n_h, 4),  Cg = roundup(n_g, 4),  Rp = roundup(R, 128)
///     off = Q_g*Rp + blocked over [Rp, Cg] of (r, c - s_g)
///
/// Scales past the last group end belong to no group and are not stored (offset -1). Storage is
/// bounded on the host WITHOUT reading `offs` (padding bytes are zero):
///     rows groups:    (roundup(R,128) + 128*G) * roundup(C,4)
///     columns groups: roundup(R,128) * (roundup(C,4) + 4*G)
Layout Layout::grouped_blocked_128x4(std::string offsets_name, int group_axis) {
  try {
    return blocked_128x4().groups(std::move(offsets_name), group_axis);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("layout::grouped_blocked_128x4: {}", e.what()));
  }
}

Layout layout::grouped_blocked_128x4(const Offsets& ends, int group_axis) {
  return Layout::grouped_blocked_128x4(ends.name, group_axis);
}

/// mn_major_tma: scales MN-major with every scale column padded to 4 rows (16 bytes of FP32, the
/// TMA's alignment): DeepGEMM's SM90 SFA, vLLM's tma_aligned_scales, SGLang's scale_tma_aligned,
/// Transformer Engine's GEMM_READY 1-D scales (rowwise, and columnwise on the transposed data).
/// With A = roundup(R, 4) and G = C scale columns:
///
///     off = b*A*G + c*A + r          rows r in [R, A) are padding (zero)
Layout Layout::mn_major_tma() { return modes({rest, cols, rows}).align(rows, 4); }

/// mn_major_tma_packed: mn_major_tma of 32-bit words holding four byte scales each (DeepGEMM's
/// SM100 packed UE8M0, vLLM's and SGLang's ue8m0 packing). Word (b, r, w) holds scales
/// c = 4w .. 4w+3, byte i (little-endian) = scale 4w+i; columns past C are zero bytes:
///
///     word offset = b*A*Gp + w*A + r,    A = roundup(R, 4), Gp = ceil(C / 4)
///     byte offset = 4 * word offset + c%4
///
///        word w of row r:  | c=4w | c=4w+1 | c=4w+2 | c=4w+3 |   (one int32)
Layout Layout::mn_major_tma_packed() { return modes({rest, cols / 4, rows, cols % 4}).align(rows, 4).pack(4); }

/// gemm_ready_2d: Transformer Engine's GEMM_READY scales of 128x128 tiles, rowwise: the tile
/// matrix [MB, KB] row-major with KB padded to 4 (off = mb*roundup(KB,4) + kb). gemm_ready_2d_t:
/// the columnwise (transposed) form, off = kb*roundup(MB,4) + mb.
Layout Layout::gemm_ready_2d() { return modes({rest, axis(-2), axis(-1)}).align(axis(-1), 4); }
Layout Layout::gemm_ready_2d_t() { return modes({rest, axis(-1), axis(-2)}).align(axis(-2), 4); }

std::pair<int, int> detail::blocked_atom(const Layout& l) {
  const Layout base = l.grouped() ? Layout::modes(l.modes()) : l;
  if (base == Layout::blocked_128x4()) return {128, 4};
  if (base == Layout::blocked_8x4()) return {8, 4};
  return {0, 0};
}

const std::vector<std::pair<std::string, Layout>>& named_layouts() {
  static const std::vector<std::pair<std::string, Layout>> named = {
      {"row_major", Layout::row_major()},
      {"col_major", Layout::col_major()},
      {"expert_col_major", Layout::expert_col_major()},
      {"blocked128x4", Layout::blocked_128x4()},
      {"blocked8x4", Layout::blocked_8x4()},
      {"mn_major_tma", Layout::mn_major_tma()},
      {"mn_major_tma_packed", Layout::mn_major_tma_packed()},
      {"gemm_ready_2d", Layout::gemm_ready_2d()},
      {"gemm_ready_2d_t", Layout::gemm_ready_2d_t()},
  };
  return named;
}

}  // namespace mxjit
