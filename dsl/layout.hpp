#pragma once
/// \file Layouts as values, in the manner of CuTe's layout algebra: where each element of a
/// logical tensor lands in memory.
///
/// A layout lists MODES, outermost first. A mode is a sub-axis of one logical axis i of the value:
///
///     i / div % ext       (ext 0, written without "% ext": the whole rest of the padded axis)
///
/// Each axis is split into a chain of modes whose divisors multiply up (1, ext0, ext0*ext1, ...),
/// the top one whole; an axis may be padded (aligned) to a multiple of m, and the splits pad it to
/// the product of their extents. Storage is compact in the order of the modes (the innermost
/// mode has stride 1), so a layout is a shape:stride whose strides follow from the extents:
///
///     offset(i) = sum over modes k of  (i[axis_k] / div_k % ext_k) * stride_k,
///     stride_k  = product of the extents of the modes inside k
///
/// Axes are named rank-agnostically and bound when the pipeline is built (Layout::bind):
///     0, 1, ... from the front; -1, -2, ... from the back;
///     rows, cols (text r, c): the scale matrix of 1-D blocks: cols = the block axis, rows = the
///         innermost other axis (scale layouts; the GEMM's MN and K);
///     rest (text *): every axis not named otherwise, in order; ~rest (text ~*) in reverse order.
///
/// Three combinators complete the algebra:
///     align(axis, m)  pad the axis to a multiple of m (padding is zero, written by the kernel);
///     pack(p)         the innermost mode (extent p) packs p values into one storage word;
///     groups(...)     jagged groups along an axis: each group is a tensor of its own in this
///                     layout, concatenated at padded starts read from a device array.
///
/// The named layouts are definitions in this algebra (dsl/layouts.cpp, with their diagrams):
///     row_major        = modes(*)                 col_major = modes(~*)
///     expert_col_major = modes(0,~*)              perm(2,0,1) = modes(2,0,1)
///     blocked128x4     = modes(*,r/128,c/4,r%32,r/32%4,c%4)
///     blocked8x4       = modes(*,r/8,c/4,r%8,c%4)
///     mn_major_tma     = modes(*,c,r).align(r,4)
///     mn_major_tma_packed = modes(*,c/4,r,c%4).align(r,4).pack(4)
///     gemm_ready_2d    = modes(*,-2,-1).align(-1,4)      gemm_ready_2d_t = modes(*,-1,-2).align(-2,4)
///     grouped_blocked128x4(axis,offs) = blocked128x4.groups(axis,offs)
/// A layout prints by its name when it equals a named definition, else in the general form
/// (`modes(*,c/4,r,c%4).align(r,4).pack(4)`), and parses from either.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dsl/hash.hpp"

namespace mxjit {

struct Offsets;
class Layout;

/// A rank-agnostic reference to an axis of the value a layout is applied to (file comment).
class Axis {
 public:
  enum class Kind : uint8_t { index, rows, cols, rest };
  /// Axis `a` from the front (a >= 0) or from the back (-1: the last axis).
  static Axis at(int a) { return Axis(Kind::index, a, false); }
  static Axis rows() { return Axis(Kind::rows, 0, false); }
  static Axis cols() { return Axis(Kind::cols, 0, false); }
  /// Every axis the layout does not name otherwise, in increasing order.
  static Axis rest() { return Axis(Kind::rest, 0, false); }
  /// `rest` in decreasing order.
  Axis operator~() const { return Axis(kind_, value_, !reversed_); }

  Kind kind() const { return kind_; }
  int value() const { return value_; }
  bool reversed() const { return reversed_; }
  /// Text: "0", "-1", "r", "c", "*", "~*".
  std::string str() const;
  friend bool operator==(const Axis&, const Axis&) = default;
  friend auto operator<=>(const Axis&, const Axis&) = default;

 private:
  Axis(Kind k, int v, bool rev) : kind_(k), value_(v), reversed_(rev) {}
  Kind kind_;
  int value_;
  bool reversed_;
};

/// One mode: the sub-axis `i / div % ext` of an axis (ext 0: the whole rest of the padded axis).
struct Mode {
  Axis axis;
  int64_t div = 1;
  int64_t ext = 0;
  Mode(Axis a) : axis(a) {}  // NOLINT: an axis is its own whole mode
  Mode(Axis a, int64_t d, int64_t e) : axis(a), div(d), ext(e) {}
  /// Text: "r/32%4", "c%4", "r/128", "-1", "*".
  std::string str() const;
  friend bool operator==(const Mode&, const Mode&) = default;
};
/// Sub-axes: `rows / 32 % 4`, `cols % 4`, `rows / 128`. UsageError for a divisor or extent < 1,
/// a split of `rest`, or a split of a mode that already has an extent.
Mode operator/(const Mode& m, int64_t div);
Mode operator%(const Mode& m, int64_t ext);

/// A layout bound to a value: every mode on a concrete axis, with the value's padding (see
/// dsl/layout_bound.hpp for the offset function and its lowerings).
struct BoundLayout;

/// A memory layout for an output or a scale input: an immutable value (file comment).
class Layout {
 public:
  /// Row-major (C order) for any rank.
  static Layout row_major();
  /// Column-major (Fortran order: axis 0 fastest) for any rank.
  static Layout col_major();
  /// Per-expert column-major: leading axis outermost, then the rest column-major.
  static Layout expert_col_major();
  /// Axes listed outermost first; must be a permutation of 0..R-1 (the identity is row_major).
  static Layout permuted(std::vector<int> order);
  /// Compact row-major of the logical tensor (the plain scale layout).
  static Layout linear() { return row_major(); }
  /// The cuBLAS/CUTLASS 128x4 block-scaled GEMM scale layout (dsl/layouts.cpp).
  static Layout blocked_128x4();
  /// 8x4 atoms of 32 bytes.
  static Layout blocked_8x4();
  /// Per-group 128x4 blocked scales (dsl/layouts.cpp): groups along domain axis `group_axis`
  /// with ends in the int32 input `offsets_name`. UsageError for an empty or malformed name or a
  /// negative axis.
  static Layout grouped_blocked_128x4(std::string offsets_name, int group_axis);
  /// Scales MN-major, each column of the scale matrix padded to 4 (16 bytes of FP32): DeepGEMM's
  /// SM90 scale layout, Transformer Engine's GEMM_READY 1-D scales (dsl/layouts.cpp).
  static Layout mn_major_tma();
  /// mn_major_tma of 32-bit words, four byte scales per word (DeepGEMM's SM100 packed UE8M0).
  static Layout mn_major_tma_packed();
  /// Transformer Engine's GEMM_READY 2-D (128x128 tile) scales: row-major, the last axis padded
  /// to 4; `_t`: the transposed (columnwise) form.
  static Layout gemm_ready_2d();
  static Layout gemm_ready_2d_t();

  /// A layout from its modes, outermost first (file comment). UsageError naming the rule for an
  /// axis whose splits do not chain (divisors 1, e0, e0*e1, ..., the top one whole), an axis
  /// placed twice, `rest` twice.
  static Layout modes(std::vector<Mode> modes);
  /// This layout with `axis` padded to a multiple of `m` (>= 1; combined with the splits' own
  /// alignment by lcm). UsageError for an axis the layout does not place, or `rest`.
  Layout align(Axis axis, int64_t m) const;
  /// This layout with its innermost mode (extent `p`) packing p values into one storage word.
  Layout pack(int p) const;
  /// Jagged groups along domain axis `group_axis`, ends in the int32 input `offsets_name`.
  Layout groups(std::string offsets_name, int group_axis) const;

  const std::vector<Mode>& modes() const { return modes_; }
  /// Explicit alignments beyond the splits' own, by axis.
  const std::vector<std::pair<Axis, int64_t>>& alignments() const { return align_; }
  /// Values per storage word (1: unpacked).
  int packing() const { return pack_; }
  /// True for layouts with groups.
  bool grouped() const { return !group_offsets_.empty(); }
  /// Grouped layouts: the name of the offsets input holding the group ends ("" otherwise).
  const std::string& group_offsets() const { return group_offsets_; }
  /// Grouped layouts: the domain axis the groups split (-1 otherwise).
  int group_axis() const { return group_axis_; }
  /// Whether a mode names the scale rows or columns (then only scales of 1-D blocks take it).
  bool uses_roles() const;
  /// True when every axis is one whole mode, without padding or packing: a permutation of the
  /// axes (the layouts of elements and values).
  bool is_permutation() const;

  /// The layout bound to a value of `rank` whose scale rows and columns are `rows` and `cols`
  /// (-1: none, the value is not a scale matrix of 1-D blocks). UsageError, naming the layout
  /// and the rule, when it does not fit (rank, roles, an axis placed twice or not at all).
  BoundLayout bind(int rank, int rows = -1, int cols = -1) const;
  /// The axes of a permutation layout for `rank`, outermost first (bind(rank).order()).
  std::vector<int> order(int rank) const;

  /// Canonical text (file comment): the name of a named layout, else definition().
  std::string str() const;
  /// The general form, names spelled out: "modes(*,c,r).align(r,4)" for mn_major_tma.
  std::string definition() const;
  /// Parses str()'s output (and the general form with spaces); UsageError naming the text.
  static Layout parse(const std::string& text);
  /// 128-bit hash of str().
  Hash128 hash() const { return hash128(str()); }
  friend bool operator==(const Layout&, const Layout&) = default;

 private:
  std::vector<Mode> modes_ = {Mode(Axis::rest())};  // default: row_major
  std::vector<std::pair<Axis, int64_t>> align_;  // sorted by axis, each > the splits' own
  int pack_ = 1;
  std::string group_offsets_;  // grouped: the offsets input
  int group_axis_ = -1;        // grouped: the domain axis split into groups
};

/// The named layouts and their text names, in the order str() tries them.
const std::vector<std::pair<std::string, Layout>>& named_layouts();

/// Shorthands in the style of the DSL: `layout::col_major()`,
/// `layout::modes({layout::rest, layout::cols / 4, layout::rows, layout::cols % 4})`.
namespace layout {
inline const Axis rows = Axis::rows();
inline const Axis cols = Axis::cols();
inline const Axis rest = Axis::rest();
inline Axis axis(int a) { return Axis::at(a); }
inline Layout modes(std::vector<Mode> m) { return Layout::modes(std::move(m)); }
inline Layout row_major() { return Layout::row_major(); }
inline Layout col_major() { return Layout::col_major(); }
inline Layout expert_col_major() { return Layout::expert_col_major(); }
inline Layout permuted(std::vector<int> order) { return Layout::permuted(std::move(order)); }
inline Layout linear() { return Layout::linear(); }
inline Layout blocked_128x4() { return Layout::blocked_128x4(); }
inline Layout blocked_8x4() { return Layout::blocked_8x4(); }
inline Layout mn_major_tma() { return Layout::mn_major_tma(); }
inline Layout mn_major_tma_packed() { return Layout::mn_major_tma_packed(); }
inline Layout gemm_ready_2d() { return Layout::gemm_ready_2d(); }
inline Layout gemm_ready_2d_t() { return Layout::gemm_ready_2d_t(); }
/// Per-group 128x4 scales: `layout::grouped_blocked_128x4(offsets("offs"), /*group_axis=*/0)`.
/// The pipeline then takes the offsets input (int32, group ends along `group_axis`).
Layout grouped_blocked_128x4(const Offsets& ends, int group_axis);
}  // namespace layout

namespace detail {
/// The atom of a blocked layout, groups aside: {128, 4} for blocked_128x4, {8, 4} for
/// blocked_8x4, {0, 0} for any other. A stopgap for the CUDA generator and the LLVM backend,
/// whose lowerings special-case these two until they lower any layout (issue 34, step 2).
std::pair<int, int> blocked_atom(const Layout& l);
/// blocked_atom(l).first > 0.
inline bool is_blocked(const Layout& l) { return blocked_atom(l).first > 0; }
}  // namespace detail

}  // namespace mxjit

#include "dsl/layout_bound.hpp"
