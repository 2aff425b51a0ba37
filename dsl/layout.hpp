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
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mxjit {

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

  Kind kind() const { return kind_; }
  /// For permuted layouts, the axes outermost first; empty means "all axes in order" (row_major)
  /// or, with reversed_ set, col_major; expert_ marks expert_col_major. Resolved by `order(rank)`.
  std::vector<int> order(int rank) const;
  /// Atom rows and columns of a blocked layout (128x4 or 8x4).
  int atom_rows() const { return atom_rows_; }
  int atom_cols() const { return atom_cols_; }
  bool is_blocked() const { return kind_ == Kind::blocked; }

  /// Checks that the layout fits a value of `rank`; returns an error text, or "" when it fits.
  std::string check_rank(int rank) const;

  /// Storage size in elements of a tensor with `shape` (padding included). For blocked layouts,
  /// `row_axis` / `col_axis` name the axes treated as rows and columns; all others are batch.
  int64_t storage_size(std::span<const int64_t> shape, int row_axis = -1, int col_axis = -1) const;
  /// Offset in elements of logical `index` (see storage_size for the axes).
  int64_t offset(std::span<const int64_t> index, std::span<const int64_t> shape, int row_axis = -1,
                 int col_axis = -1) const;
  /// Compact strides (in elements) of a permuted layout for `shape`.
  std::vector<int64_t> strides(std::span<const int64_t> shape) const;

  /// Canonical text: "row_major", "col_major", "expert_col_major", "perm(0,2,1)", "blocked128x4".
  std::string str() const;
  /// Parses str()'s output; throws UsageError naming the text.
  static Layout parse(const std::string& text);
  friend bool operator==(const Layout&, const Layout&) = default;

 private:
  Kind kind_ = Kind::permuted;
  int named_ = 0;  // 0 explicit order, 1 row_major, 2 col_major, 3 expert_col_major
  std::vector<int> order_;
  int atom_rows_ = 0, atom_cols_ = 0;
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
}  // namespace layout

}  // namespace mxjit
