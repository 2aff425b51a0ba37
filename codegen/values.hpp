#pragma once
/// \file What a kernel computes, deduplicated: the value tiles it holds in shared memory, the
/// block scales it derives from them and the quantizations that use those scales.
#include <string>
#include <vector>

#include "dsl/pipeline.hpp"

namespace mxjit::detail {

/// The distinct computations of a pipeline, in first-use order.
struct ValueSet {
  std::vector<NodePtr> roots;      ///< value nodes held as FP32 tiles
  std::vector<NodePtr> scales;     ///< distinct scale nodes
  std::vector<int> scale_root;     ///< per scale: index into roots
  std::vector<bool> scale_flush;   ///< per scale: values flushed (a quantize using it flushes)
  std::vector<NodePtr> quantizes;  ///< distinct quantize nodes
  std::vector<int> quantize_scale; ///< per quantize: index into scales
  std::vector<int> output_index;   ///< per output: root (values, amax), scale (scales) or quantize (elems)
};

/// Collects the distinct roots, scales and quantizations of `p`.
ValueSet collect_values(const Pipeline& p);

/// True for the MX E8M0 recipes (recipes::e8m0 rules and exponents): every multiplier is a power of
/// two 2^-127..2^127 and every NaN element lies in a NaN block, which the tuned paths rely on.
bool mx_e8m0(const Node& scale);
/// True for NVFP4's recipes (recipes::nvfp4): the per-CTA multiplier tables and the tuned E2M1 paths.
bool nvfp4(const Node& scale);

/// True when every leaf of `n` is a full-rank input or a constant: the value can then be computed
/// for out-of-range elements (from zero-filled registers) and masked afterwards, with no loads.
bool register_leaves(const NodePtr& n);

}  // namespace mxjit::detail
