#pragma once
/// \file Value expressions -> CUDA statements (SSA temporaries, shared subexpressions once).
#include <functional>
#include <map>
#include <string>

#include "dsl/ir.hpp"

namespace mxjit::detail {

/// Emits the statements computing one FP32 value per element.
class ExprEmitter {
 public:
  /// `leaf` returns the C expression of an input-like node (input, vec_input, dequant, amax_var).
  explicit ExprEmitter(std::function<std::string(const NodePtr&)> leaf, std::string prefix)
      : leaf_(std::move(leaf)), prefix_(std::move(prefix)) {}
  /// Appends statements to `body` (indented by `indent`) and returns the variable holding `n`.
  std::string emit(const NodePtr& n, std::string& body, const std::string& indent);

 private:
  std::function<std::string(const NodePtr&)> leaf_;
  std::string prefix_;
  std::map<std::string, std::string> done_;
  int next_ = 0;
};

/// An exact FP32 literal for `v` (hex bits, so Inf/NaN and every value survive the round trip).
std::string float_literal(double v);

}  // namespace mxjit::detail
