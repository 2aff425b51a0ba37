#pragma once
/// \file Layouts as values: where each element of a logical tensor lands in memory.
///
/// A layout maps a logical index (i0, ..., i{R-1}) of a tensor with extents (n0, ..., n{R-1})
/// to an offset in elements. Layouts are rank-agnostic when declared (`row_major()` fits any
/// rank) and checked against the value's rank when a pipeline is built.
///
///   permuted{order}: axes listed outermost first, compact strides.
///     row_major  = (0, 1, ..., R-1)      col_major = (R-1, ..., 1, 0)
///     expert_col_major = (0, R-1, ..., 1): per-expert (leading axis) column-major
///
///   blocked{128x4}: the cuBLAS/CUTLASS block-scaled GEMM scale layout. Rows r (of R) and
///   columns c (of C) are padded to Rp = roundup(R,128), Cp = roundup(C,4); each 128x4 tile is
///   one 512-byte atom in which row r%32 picks a 16-byte line and (r%128)/32 a 4-byte group:
///
///     off = ((r/128)*(Cp/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + c%4   (+ b*Rp*Cp per batch)
///
///        atom (128 rows x 4 cols)          bytes of one 16-byte line (r%32 fixed)
///     rows  0..31  -> group 0              | r     c0..c3 | r+32 c0..c3 | r+64 .. | r+96 .. |
///     rows 32..63  -> group 1
///     rows 64..95  -> group 2
///     rows 96..127 -> group 3
///
///   blocked{8x4}: the same idea with 8x4 atoms of 32 bytes (r%8)*4 + c%4.
///   For scale tensors, "rows" is the non-block axis and "columns" the block axis, so a dim1
///   cast's scales get the MN-major variant (the atom on the transposed scale matrix) for free.
///
///   grouped_blocked{128x4}(axis, offs): per-group blocked scales for grouped GEMMs (MoE). The
///   scale tensor [R, C] (rank 2) is split into G groups along its rows or its columns by the
///   int32 device array `offs` of cumulative group ENDS (torch's `offs`), given in domain units
///   along domain axis `axis` and turned into scale units by the block size along that axis
///   (1 for the rows axis; a group end on a blocked axis must be a multiple of the block size or
///   the extent, see scale_group_ends in dsl/geometry.hpp). With scale-unit ends e_0 <= ... <=
///   e_{G-1}, group g holds s_g = e_{g-1} .. e_g - 1 (e_{-1} = 0); n_g = e_g - s_g may be 0.
///   Each group is one complete 128x4-blocked tensor of its own, at a padded start:
///
///   token groups along the rows (axis = the rows axis; e.g. dim0 casts of MoE activations):
///     P_g = sum_{h<g} roundup(n_h, 128)            first padded row of group g
///     row r of group g -> padded row p = P_g + (r - s_g); then the 128x4 formula on (p, c)
///     with Cp = roundup(C, 4): off = ((p/128)*(Cp/4) + c/4)*512 + (p%32)*16 + ((p%128)/32)*4 + c%4
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
///   groups along the columns (axis = the block axis; e.g. a weight-gradient cast whose scale
///   columns split by K-groups): each group's columns start 4-aligned, each group contiguous:
///     Q_g = sum_{h<g} roundup(n_h, 4)              first padded column of group g
///     Cg  = roundup(n_g, 4), Rp = roundup(R, 128), column c of group g -> k = c - s_g
///     off = Q_g*Rp + ((r/128)*(Cg/4) + k/4)*512 + (r%32)*16 + ((r%128)/32)*4 + k%4
///
///   Scales past the last group end belong to no group and are not stored (offset -1). Storage
///   is an upper bound computable on the host WITHOUT reading `offs` (padding bytes are zero):
///     rows groups:    (roundup(R,128) + 128*G) * roundup(C,4)
///     columns groups: roundup(R,128) * (roundup(C,4) + 4*G)
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mxjit {

struct Offsets;

/// A memory layout for an output (or a scale input).
class Layout {
 public:
  /// What family the layout belongs to.
  enum class Kind : uint8_t { permuted, blocked };

  /// Row-major (C order) for any rank.
  static Layout row_major();
  /// Column-major (Fortran order: axis 0 fastest) for any rank.
  static Layout col_major();
  /// Per-expert column-major: leading axis outermost, then the rest column-major.
  static Layout expert_col_major();
  /// Axes listed outermost first; must be a permutation of 0..R-1.
  static Layout permuted(std::vector<int> order);
  /// Compact row-major of the logical tensor (the plain scale layout).
  static Layout linear() { return row_major(); }
  /// The cuBLAS/CUTLASS 128x4 block-scaled GEMM scale layout (see the file comment).
  static Layout blocked_128x4();
  /// 8x4 atoms of 32 bytes.
  static Layout blocked_8x4();
  /// Per-group 128x4 blocked scales (see the file comment): groups along domain axis
  /// `group_axis` with ends in the int32 input `offsets_name`. Throws UsageError for an empty or
  /// malformed name or a negative axis.
  static Layout grouped_blocked_128x4(std::string offsets_name, int group_axis);

  Kind kind() const { return kind_; }
  /// For permuted layouts, the axes outermost first; empty means "all axes in order" (row_major)
  /// or, with reversed_ set, col_major; expert_ marks expert_col_major. Resolved by `order(rank)`.
  std::vector<int> order(int rank) const;
  /// Atom rows and columns of a blocked layout (128x4 or 8x4).
  int atom_rows() const { return atom_rows_; }
  int atom_cols() const { return atom_cols_; }
  bool is_blocked() const { return kind_ == Kind::blocked; }
  /// True for grouped blocked layouts (is_blocked() is true as well).
  bool is_grouped() const { return !group_offsets_.empty(); }
  /// Grouped layouts: the name of the offsets input holding the group ends ("" otherwise).
  const std::string& group_offsets() const { return group_offsets_; }
  /// Grouped layouts: the domain axis the groups split (-1 otherwise).
  int group_axis() const { return group_axis_; }

  /// Checks that the layout fits a value of `rank`; returns an error text, or "" when it fits.
  std::string check_rank(int rank) const;

  /// Storage size in elements of a tensor with `shape` (padding included). For blocked layouts,
  /// `row_axis` / `col_axis` name the axes treated as rows and columns; all others are batch.
  /// Grouped layouts: the host-side upper bound for `groups` groups (file comment).
  int64_t storage_size(std::span<const int64_t> shape, int row_axis = -1, int col_axis = -1,
                       int64_t groups = 0) const;
  /// Offset in elements of logical `index` (see storage_size for the axes). Grouped layouts take
  /// the groups' ends in scale units along the grouped axis (`group_ends`, validated by the
  /// caller: non-decreasing, >= 0, <= the extent) and return -1 for an index in no group.
  int64_t offset(std::span<const int64_t> index, std::span<const int64_t> shape, int row_axis = -1,
                 int col_axis = -1, std::span<const int64_t> group_ends = {}) const;
  /// The inverse of offset(): the logical index stored at `offset`, or nullopt for a padding
  /// position (or one past storage_size). Same arguments as offset().
  std::optional<std::vector<int64_t>> index_at(int64_t offset, std::span<const int64_t> shape, int row_axis = -1,
                                               int col_axis = -1, std::span<const int64_t> group_ends = {}) const;
  /// Compact strides (in elements) of a permuted layout for `shape`.
  std::vector<int64_t> strides(std::span<const int64_t> shape) const;

  /// Canonical text: "row_major", "col_major", "expert_col_major", "perm(0,2,1)", "blocked128x4",
  /// "grouped_blocked128x4(0,offs)" (group axis, offsets input).
  std::string str() const;
  /// Parses str()'s output; throws UsageError naming the text.
  static Layout parse(const std::string& text);
  friend bool operator==(const Layout&, const Layout&) = default;

 private:
  Kind kind_ = Kind::permuted;
  int named_ = 0;  // 0 explicit order, 1 row_major, 2 col_major, 3 expert_col_major
  std::vector<int> order_;
  int atom_rows_ = 0, atom_cols_ = 0;
  std::string group_offsets_;  // grouped: the offsets input
  int group_axis_ = -1;        // grouped: the domain axis split into groups
};

/// Shorthands in the style of the DSL: `layout::col_major()`.
namespace layout {
inline Layout row_major() { return Layout::row_major(); }
inline Layout col_major() { return Layout::col_major(); }
inline Layout expert_col_major() { return Layout::expert_col_major(); }
inline Layout permuted(std::vector<int> order) { return Layout::permuted(std::move(order)); }
inline Layout linear() { return Layout::linear(); }
inline Layout blocked_128x4() { return Layout::blocked_128x4(); }
inline Layout blocked_8x4() { return Layout::blocked_8x4(); }
/// Per-group 128x4 scales: `layout::grouped_blocked_128x4(offsets("offs"), /*group_axis=*/0)`.
/// The pipeline then takes the offsets input (int32, group ends along `group_axis`).
Layout grouped_blocked_128x4(const Offsets& ends, int group_axis);
}  // namespace layout

}  // namespace mxjit
