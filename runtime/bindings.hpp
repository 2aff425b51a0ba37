#pragma once
/// \file Launch-time checks (shared by the CPU reference and the GPU launcher) of bound tensors against a pipeline, and the stride class they imply.
#include <span>
#include <string>
#include <vector>

#include "dsl/geometry.hpp"
#include "runtime/tensor.hpp"

namespace mxjit::detail {

/// What the checks learned about one launch.
struct Binding {
  std::vector<int64_t> shape;          ///< the domain extents
  int64_t groups = 0;                  ///< the largest offsets input's extent (Plan::launch)
  std::vector<OutputGeometry> outputs; ///< per output
  std::vector<int> unit_axis;          ///< per input: the axis with stride 1 (-1: none)
  std::vector<bool> aligned;           ///< per input: 16-byte aligned base and other strides
  /// Per input: a unit-stride axis and every other stride 16-byte aligned, so that `aligned` is
  /// whether the base address is (what a prepared launch checks per pointer).
  std::vector<bool> strides_aligned;
  bool empty = false;                  ///< some extent is 0: nothing to launch
};

/// One view's part of a stride class: its unit-stride axis (the innermost axis of extent > 1 with
/// stride 1, else the last axis where its stride is 1; -1 for none) and whether every other axis of
/// extent > 1 steps whole 16-byte vectors (the base address aside). A launch (check_bindings) and
/// `mxjit explore` (contiguous_stride_class) decide with it alike.
struct ViewClass {
  int unit = -1;
  bool strides_aligned = false;
};
ViewClass view_class(std::span<const int64_t> shape, std::span<const int64_t> strides, DType dtype);

/// Bytes a view can touch from its base (0 for an empty view; strides checked positive); UsageError
/// where that count overflows int64 (check_view_size refuses such views first).
int64_t span_bytes(const TensorView& v);
/// Checks that view `v` holds at most kMaxElements elements (dsl/limits.hpp) and that its strides
/// address no byte past the end of the address space; UsageError naming `what` otherwise.
void check_view_size(const std::string& what, const TensorView& v);

/// Checks `inputs`/`outputs` against `p` (device `device`: cpu or cuda) and throws UsageError
/// naming the argument and the rule broken.
Binding check_bindings(const Pipeline& p, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                       DeviceKind device);

}  // namespace mxjit::detail
