#pragma once
/// \file FP32 evaluation of a pipeline's value expressions (the fused prologue and dequantize)
/// over the whole domain, as the reference defines it: inputs widened to FP32 exactly, every
/// operation one separately rounded FP32 operation or one mx_math.cuh function.
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "dsl/pipeline.hpp"
#include "runtime/tensor.hpp"

namespace mxjit::reference {

/// Element offsets (in elements) of every index of `shape`, enumerated row-major, in a view
/// with `strides`.
std::vector<int64_t> strided_offsets(std::span<const int64_t> shape, std::span<const int64_t> strides);

/// Reads element `offset` of a bf16 / f16 / f32 view as FP32 (exactly).
float load_as_f32(const TensorView& view, int64_t offset);

/// `x` with FP32 subnormals replaced by zeros of the same sign.
float flush_subnormal(float x);

/// Evaluates value nodes over the domain, each once (memoized by node).
class ValueEvaluator {
 public:
  /// `inputs` in p.inputs() order, already validated against `domain` by the executor.
  ValueEvaluator(const Pipeline& p, std::span<const TensorView> inputs, std::vector<int64_t> domain);

  /// The domain's extents.
  const std::vector<int64_t>& domain() const { return domain_; }

  /// FP32 values of value node `n` for every domain element (row-major); rank-0 nodes
  /// (constants) give one value.
  const std::vector<float>& values(const NodePtr& n);

 private:
  std::vector<float> evaluate(const NodePtr& n);
  std::vector<float> read_input(const Node& n) const;
  std::vector<float> read_vector(const Node& n) const;
  std::vector<float> dequantize(const Node& n) const;
  const TensorView& input(const std::string& name) const;

  const Pipeline& pipeline_;
  std::span<const TensorView> inputs_;
  std::vector<int64_t> domain_;
  int64_t numel_ = 0;
  std::map<const Node*, std::vector<float>> memo_;
};

}  // namespace mxjit::reference
