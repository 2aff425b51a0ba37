#pragma once
/// \file The CPU reference executor: runs a pipeline on host tensors by the rules of
/// docs/numerics.md. It is the bit-exact oracle every GPU kernel is compared with.
///
/// ```cpp
/// auto p = pipeline({output("q", q), output("s", scale)});
/// reference::run(p, {x_view}, {q_view, s_view});  // views shaped as output_geometry(...)
/// ```
#include <span>

#include "dsl/pipeline.hpp"
#include "runtime/tensor.hpp"

namespace mxjit::reference {

/// Runs `p` on the CPU. `inputs` follow p.inputs() (full-rank tensors with any non-negative
/// strides; vectors and offsets 1-D; dequantize codes with the packed extent along the block
/// axis for FP4, scales in the linear layout); `outputs` follow p.outputs(), each a host view
/// shaped exactly as output_geometry(p, i, domain, groups).view_shape with its view_strides.
/// Throws UsageError naming the input or output and the broken rule (count, device, null data,
/// dtype, rank, extents, strides, offsets).
void run(const Pipeline& p, std::span<const TensorView> inputs, std::span<const TensorView> outputs);

/// The checks run() makes of its inputs (count, device, dtypes, extents, strides, group ends
/// non-decreasing and within their axis), without running: a backend that falls back to the
/// reference for what it cannot lower calls it first, so that the user's mistakes are errors
/// on every device, not a fallback. Throws UsageError as run() would.
void check_inputs(const Pipeline& p, std::span<const TensorView> inputs);

/// The domain extents run() infers from `inputs` (the full-rank inputs' shape, or a dequantize
/// codes input's shape with the FP4 packed extent doubled). Throws UsageError when none fits.
std::vector<int64_t> infer_domain(const Pipeline& p, std::span<const TensorView> inputs);

}  // namespace mxjit::reference
