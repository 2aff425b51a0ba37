#pragma once
// The generator fuzzer's cases (issue 36, issue 33): bytes -> a random pipeline built with the C++
// DSL (rank 1..4; every element format, scale family, rule, NaN policy, rounding, block shape
// from 1 to past the 2^40 limit, jagged groups, layout and prologue; dequantize pipelines) and
// the inputs of one launch (extents tiny, odd, empty with huge others, past the element limit;
// C, Fortran, permuted and padded strides; random, adversarial and FP32-edge data; valid and
// invalid group ends). The same bytes always give the same case; a shorter input gives the
// default for every choice past its end, so libFuzzer can mutate and shrink them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dsl/pipeline.hpp"

namespace mxjit::fuzz {

/// Choices read from bytes: each next value from the next bytes, 0 once they run out.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  /// A value in [0, n) (n >= 1).
  uint32_t below(uint32_t n);
  /// True with probability about 1 / n.
  bool one_in(uint32_t n) { return below(n) == 0; }
  /// An element of `v` (non-empty).
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(uint32_t(v.size()))];
  }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

/// How an input's bytes are filled.
enum class Fill : uint8_t { random, adversarial, edge };

/// One input of the launch, following Pipeline::inputs().
struct InputData {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;    ///< the view's extents
  std::vector<int64_t> strides;  ///< in elements (C, Fortran, permuted, padded)
  Fill fill = Fill::random;
  float edge = 0;                ///< Fill::edge: the block maxima (support/fp32_edges.hpp)
  std::vector<int32_t> ends;     ///< offsets inputs: the group ends; counts inputs: the counts
  bool unaddressable = false;    ///< extents past what can be allocated: the view must be refused unread
};

/// A generated case: the pipeline (or the UsageError that refused it) and the launch's inputs.
struct Case {
  std::string recipe;                ///< the choices, readable (for reports)
  std::optional<Pipeline> pipeline;  ///< nullopt: building it threw UsageError `refused`
  std::string refused;
  std::vector<int64_t> domain;
  int64_t groups = 0;                ///< extent of the (first) offsets input
  std::vector<InputData> inputs;
  uint64_t seed = 0;                 ///< data seed
};

/// The case the bytes describe. Throws only what the DSL throws on purpose (UsageError, caught
/// into Case::refused); anything else is a defect the caller reports.
Case generate_case(Choices& c);

}  // namespace mxjit::fuzz
