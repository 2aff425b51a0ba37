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
  enum class Kind : uint8_t { tensor, vector, offsets, codes, scales, counts } kind = Kind::tensor;
  int axis = -1;      ///< vector, counts: the domain axis it runs along
  /// A 1-D input (vector, offsets, counts), whose unit-stride axis is its only one.
  bool one_dim() const { return kind == Kind::vector || kind == Kind::offsets || kind == Kind::counts; }
};

/// Masked rows (SGLang's `masked_m`, the masked layout of DeepGEMM's grouped GEMMs): along `axis`
/// only the first counts[i] positions are real at index i of axis `by`. The others are neither read
/// nor written: their output bytes keep what they held, except in an output whose layout pads at
/// this shape (OutputGeometry::padded, e.g. mn_major_tma over rows not a multiple of 4), which is
/// zeroed whole first. Blocks lie along other axes.
///
///     x [E=3, T=6, K], mask(1, 0, "masked_m"), masked_m = {4, 0, 6}:
///         e=0  t: R R R R . .        R real row (read, cast, written)
///         e=1  t: . . . . . .        . masked row (untouched)
///         e=2  t: R R R R R R
///
/// `counts` names an int32 input of length extent(by), added after the other inputs. The CPU
/// reference and the CPU backend refuse a count outside [0, extent(axis)]; a GPU kernel cannot check
/// device values without a sync and clamps them to that range.
struct Mask {
  int axis = -1;       ///< the masked axis (tokens)
  int by = -1;         ///< the axis whose index picks the count (experts)
  std::string counts;  ///< the int32 counts input
  bool active() const { return axis >= 0; }
};
/// `mask(1, 0, "masked_m")`: positions along axis 1 counted per index of axis 0.
inline Mask mask(int axis, int by, std::string counts) { return Mask{axis, by, std::move(counts)}; }

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
  /// The masked rows, if any (mask().active()).
  const Mask& mask() const { return mask_; }
  /// Index of the counts input of the mask, or -1 without one.
  int counts_input() const { return mask_.active() ? input_index(mask_.counts) : -1; }

 private:
  friend Pipeline pipeline(std::vector<Output> outputs, Mask mask);
  std::vector<Output> outputs_;
  std::vector<InputDecl> inputs_;
  int rank_ = 0;
  Mask mask_;
  std::string text_;
  Hash128 hash_;
};

/// Validates and freezes a pipeline. Throws UsageError on misuse (duplicate names, layout rank
/// mismatch, inputs declared twice differently, ...).
Pipeline pipeline(std::vector<Output> outputs);
/// A pipeline over masked rows (see Mask). UsageError, naming the output, for blocks along the
/// masked or the counting axis, jagged groups, tensor amaxes (NVFP4's, tensorwise scales, amax
/// outputs) and scale layouts written in atoms of several rows (blocked, grouped).
Pipeline pipeline(std::vector<Output> outputs, Mask mask);

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
