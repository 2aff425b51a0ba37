#pragma once
/// \file A pipeline: named outputs (quantized elements, scales, amax, plain values) over one
/// domain, validated when built, printable and hashable.
#include <string>
#include <vector>

#include "dsl/dsl.hpp"
#include "dsl/hash.hpp"

namespace mxjit {

/// What an output holds.
enum class OutputKind : uint8_t { elems, scales, amax, values };
/// "elems", "scales", "amax" or "values" (messages, the Python binding).
const char* kind_name(OutputKind k);

/// One named output with its layout.
struct Output {
  std::string name;
  OutputKind kind = OutputKind::values;
  NodePtr node;  ///< quantize, scale, tensor_amax or a value node
  Layout layout = Layout::row_major();
  DType dtype = DType::u8;  ///< storage type (u8 codes, u8/f32 scales, i32 packed scale words, f32 amax, ...)
  BoundLayout bound;        ///< the layout bound to the value; set by pipeline()
};

/// Quantized elements (u8 codes; FP4 two per byte along the innermost stored axis).
Output output(std::string name, Quantized q, Layout layout = Layout::row_major());
/// Scales (u8 for E8M0/E4M3, f32 for FP32; i32 words for a layout packing four byte scales), in
/// `layout` (linear, blocked_128x4, mn_major_tma, ...). UsageError for a packed layout whose word
/// would not be 4 bytes, or FP32 scales in a layout with split axes.
Output output(std::string name, Scale s, Layout layout = Layout::linear());
/// A tensor amax (one f32).
Output output(std::string name, Amax a);
/// Plain values (dequantized or prologue results) stored as `dtype` (bf16, f16, f32).
Output output(std::string name, Expr v, DType dtype, Layout layout = Layout::row_major());

/// A declared input, in the order kernels take them.
struct InputDecl {
  std::string name;
  DType dtype;
  int rank;           ///< full-rank inputs: the domain rank; vectors: 1; offsets: 1
  enum class Kind : uint8_t { tensor, vector, offsets, codes, scales } kind = Kind::tensor;
  int axis = -1;      ///< vector: the domain axis it runs along
};

/// An immutable, validated pipeline.
class Pipeline {
 public:
  /// The outputs, in the order given (the kernel's output order).
  const std::vector<Output>& outputs() const { return outputs_; }
  /// The inputs in order of first use (the kernel's input order).
  const std::vector<InputDecl>& inputs() const { return inputs_; }
  /// Rank of the domain (all full-rank inputs share it).
  int rank() const { return rank_; }
  /// Canonical multi-line IR text; equal pipelines print equally.
  const std::string& str() const { return text_; }
  /// 128-bit stable hash of str().
  Hash128 hash() const { return hash_; }
  /// Index of the input named `name`, or -1.
  int input_index(const std::string& name) const;

 private:
  friend Pipeline pipeline(std::vector<Output> outputs);
  std::vector<Output> outputs_;
  std::vector<InputDecl> inputs_;
  int rank_ = 0;
  std::string text_;
  Hash128 hash_;
};

/// Validates and freezes a pipeline. Throws UsageError on misuse (duplicate names, layout rank
/// mismatch, inputs declared twice differently, ...).
Pipeline pipeline(std::vector<Output> outputs);

/// The block spec a scale/quantize/amax node was built on (follows scale -> block_amax -> blocks).
const BlockSpec& block_of(const NodePtr& scale_or_quantize);
/// The blocks node under a scale or quantize node.
NodePtr blocks_node_of(const NodePtr& scale_or_quantize);
/// Shape of the scale tensor of `spec` for a domain `shape` (block axes divided, rounded up;
/// jagged axis -> `groups`).
std::vector<int64_t> scale_shape(const BlockSpec& spec, const std::vector<int64_t>& shape, int64_t groups = 0);
/// Row and column axes of a blocked scale layout for `spec` in a rank-`rank` scale tensor:
/// columns = the (first) block axis, rows = the innermost other axis.
std::pair<int, int> blocked_axes(const BlockSpec& spec, int rank);
/// The scale rows and columns (Axis::rows / Axis::cols) an output's layout binds them to: the
/// blocked_axes of the scales of 1-D fixed blocks, {-1, -1} for any other output.
std::pair<int, int> layout_roles(const Output& o, int rank);

}  // namespace mxjit
