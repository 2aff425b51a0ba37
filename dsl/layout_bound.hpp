#pragma once
/// \file A layout bound to a value (Layout::bind): every mode on a concrete axis. Here is the one
/// offset function of the algebra, `lower_offset`, written once over an arithmetic and lowered
/// three ways: host integers (below: the reference, swizzle_scales, the SVG drawings), CUDA
/// expression text (codegen) and LLVM IR (the CPU backend).
///
///     extent of mode k:  ext_k, or (whole) roundup(n[axis_k], align[axis_k]) / div_k
///     digit of mode k:   i[axis_k] / div_k % ext_k                  (whole: i[axis_k] / div_k)
///     offset:            sum_k digit_k * stride_k,  stride_k = product_{j > k} extent_j
///
/// lower_offset evaluates it Horner-wise over the outer modes (whose strides depend on the
/// extents) and as a sum of constant multiples over the inner modes of constant extent:
///
///     blocked128x4, no batch:  ((r/128) * (Cp/4) + c/4) * 512 + (r%32)*16 + (r%128)/32*4 + c%4
///                               '---- Horner, outer ----'   '--- constant strides, inner ---'
///
/// Storage is compact: offsets of the values and of the padding cover [0, size) once each.
/// Grouped layouts (Layout::groups) concatenate the groups' tensors, each bound with the group's
/// extent along the grouped axis:
///
///     offset(i) = sum_{h < g} size(n_h) + offset_g(i with i[a] - s_g),   g = the group of i[a]
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mxjit {

/// A layout bound to a value of a given rank (file comment). Built by Layout::bind.
struct BoundLayout {
  /// One mode on a concrete axis: i[axis] / div % ext (ext 0: the whole rest of the axis).
  struct Mode {
    int axis = 0;
    int64_t div = 1, ext = 0;
    friend bool operator==(const Mode&, const Mode&) = default;
  };
  int rank = 0;
  std::vector<Mode> modes;     ///< outermost first
  std::vector<int64_t> align;  ///< per axis: the padded extent is roundup(n, align[a])
  int pack = 1;                ///< values per storage word (the innermost mode's extent when > 1)
  int group_axis = -1;         ///< grouped layouts: the axis split into groups
  std::string text;            ///< the layout's text, for messages

  /// Padded extent of every axis for logical extents `shape`.
  std::vector<int64_t> padded(std::span<const int64_t> shape) const;
  /// Extent of every mode.
  std::vector<int64_t> extents(std::span<const int64_t> shape) const;
  /// Stride of every mode, in values.
  std::vector<int64_t> strides(std::span<const int64_t> shape) const;
  /// Values of storage, padding included (ungrouped; see group_size / size_bound).
  int64_t size(std::span<const int64_t> shape) const;
  /// Offset in values of logical `index` (ungrouped; lower_offset over host integers).
  int64_t offset(std::span<const int64_t> index, std::span<const int64_t> shape) const;
  /// The logical index stored at value offset `off`, or nullopt for padding or off outside [0, size).
  std::optional<std::vector<int64_t>> index_at(int64_t off, std::span<const int64_t> shape) const;

  /// Whether some axis is padded (align > 1): storage holds padding, which is zero.
  bool pads() const;
  /// Whether every axis has one storage-word mode (the modes left when the packed innermost mode
  /// is folded into the word): the storage is a strided view of the padded tensor of words.
  bool strided() const;
  /// Strided layouts: the axes outermost first.
  std::vector<int> order() const;
  /// The storage view in words: strided layouts the padded tensor of words (the packed axis
  /// divided by the packing) with compact strides; others one dimension of size / pack words.
  std::vector<int64_t> view_shape(std::span<const int64_t> shape) const;
  std::vector<int64_t> view_strides(std::span<const int64_t> shape) const;

  /// Grouped layouts, with `ends` the groups' cumulative ends along group_axis (non-decreasing,
  /// >= 0, <= the extent; the caller checks): values of storage the groups take.
  int64_t group_size(std::span<const int64_t> shape, std::span<const int64_t> ends) const;
  /// A bound on group_size for any `groups` ends, computable without reading them: the axis
  /// grows by align * groups (each group pads by less than align).
  int64_t size_bound(std::span<const int64_t> shape, int64_t groups) const;
  /// Offset of `index`, or -1 for an index past the last end (in no group, not stored).
  int64_t offset(std::span<const int64_t> index, std::span<const int64_t> shape, std::span<const int64_t> ends) const;
  /// The logical index at `off`, or nullopt for padding (or past group_size).
  std::optional<std::vector<int64_t>> index_at(int64_t off, std::span<const int64_t> shape,
                                               std::span<const int64_t> ends) const;

  friend bool operator==(const BoundLayout&, const BoundLayout&) = default;
};

/// The offset of `index` over the modes [first, last) of `l` (a compact sub-layout: the full
/// offset is the outer modes' offset times the inner modes' size plus theirs), in an arithmetic
/// `A` with a value type `A::Value` and
///   constant(int64_t), add(a, b), mul(a, b),
///   digit(i, div, ext)       i / div % ext (ext 0: i / div), i >= 0
///   extent(n, align, div)    roundup(n, align) / div, the extent of a whole mode
/// `index` and `shape` hold one value per axis (shape: logical extents). A may fold constants.
template <class A>
typename A::Value lower_offset(A& a, const BoundLayout& l, const std::vector<typename A::Value>& index,
                               const std::vector<typename A::Value>& shape, size_t first = 0, size_t last = size_t(-1)) {
  using V = typename A::Value;
  last = last > l.modes.size() ? l.modes.size() : last;
  if (first >= last) return a.constant(0);
  // The inner modes of constant extent: their strides are constants.
  size_t split = last;
  while (split > first && l.modes[split - 1].ext > 0) --split;
  auto digit = [&](size_t k) {
    const BoundLayout::Mode& m = l.modes[k];
    return a.digit(index[size_t(m.axis)], m.div, m.ext);
  };
  auto extent = [&](size_t k) {
    const BoundLayout::Mode& m = l.modes[k];
    return m.ext > 0 ? a.constant(m.ext) : a.extent(shape[size_t(m.axis)], l.align[size_t(m.axis)], m.div);
  };
  int64_t inner = 1;  // product of the constant extents inside the current mode
  for (size_t k = split; k < last; ++k) inner *= l.modes[k].ext;
  V off = a.constant(0);
  bool have = false;
  if (split > first) {
    V h = digit(first);
    for (size_t k = first + 1; k < split; ++k) h = a.add(a.mul(h, extent(k)), digit(k));
    off = a.mul(h, a.constant(inner));
    have = true;
  }
  for (size_t k = split; k < last; ++k) {
    inner /= l.modes[k].ext;
    const V t = a.mul(digit(k), a.constant(inner));
    off = have ? a.add(off, t) : t;
    have = true;
  }
  return off;
}

/// Host integers for lower_offset.
struct HostArith {
  using Value = int64_t;
  static int64_t constant(int64_t v) { return v; }
  static int64_t add(int64_t x, int64_t y) { return x + y; }
  static int64_t mul(int64_t x, int64_t y) { return x * y; }
  static int64_t digit(int64_t i, int64_t div, int64_t ext) { return ext > 0 ? i / div % ext : i / div; }
  static int64_t extent(int64_t n, int64_t align, int64_t div) { return (n + align - 1) / align * align / div; }
};

}  // namespace mxjit
