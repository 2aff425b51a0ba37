#pragma once
/// \file The canonical IR: an immutable graph of nodes that every DSL value wraps.
///
/// Value nodes compute one FP32 value per element of the pipeline's domain (the input's logical
/// shape). Block nodes group elements; scale and quantize nodes implement docs/design.md §4. The graph is
/// printed canonically (commutative arguments ordered, shared subexpressions named once) and that
/// text is what the stable hash is taken of.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dsl/dtype.hpp"
#include "dsl/format.hpp"

namespace mxjit {

/// How a block's shared scale exponent is chosen from its amax (docs/design.md §4).
enum class ScaleRule : uint8_t {
  floor,   ///< OCP v1.0: floor(log2(amax)) - emax; the largest element may clip
  rceil,   ///< NVIDIA/TE/cuBLAS: ceil(log2(amax * (1/max_normal))) in FP32; never clips
  ceil,    ///< ceil(log2(amax)) - floor(log2(max_normal))
  even,    ///< round amax's mantissa to the element's mantissa bits (RNE), then floor
  custom,  ///< a user-written scale expression of amax (see `scale_expr`)
};

/// What a block holding NaN or Inf gets. Default: nan_block (OCP, microxcaling, torchao).
enum class NanPolicy : uint8_t {
  nan_block,  ///< any NaN or Inf in the block: scale 0xFF (NaN)
  satfinite,  ///< NaN: scale 0xFF; Inf: scale 0xFE and elements saturate (Transformer Engine)
};

/// Rounding of scaled values onto the element grid.
enum class Round : uint8_t {
  nearest_even,  ///< RNE, subnormals kept
  stochastic,    ///< Philox4x32-10, reproducible from (seed, offset)
};

/// What happens to finite values beyond the format's range.
enum class Saturate : uint8_t {
  finite,  ///< clamp to +-max normal (the only mode the MX formats define)
};

/// The two NVFP4 conventions (docs/design.md §4), each bit-exact to its library.
enum class Nvfp4Convention : uint8_t { te, torchao };

/// Node kinds of the IR.
enum class Op : uint8_t {
  // value nodes: one FP32 per domain element
  input,      ///< a full-rank input tensor (name, dtype, rank)
  vec_input,  ///< a 1-D input broadcast along domain axis `axis`
  constant,   ///< an FP32 scalar
  neg, abs, relu, silu, gelu_tanh, gelu_erf, exp, sigmoid,
  add, sub, mul, div, max, min,
  dequant,  ///< args: codes input (u8), scales input; decodes MX to FP32
  // block and scale nodes
  blocks,       ///< args: value; attribute: the block spec
  block_amax,   ///< args: blocks; max |x| per block
  tensor_amax,  ///< args: value; max |x| over the whole tensor
  scale,        ///< args: block_amax [, tensor_amax (NVFP4)] [, scale expression]
  quantize,     ///< args: value, scale
  // scale-expression nodes (custom rules): a function of the block's amax
  amax_var,    ///< the block's amax (FP32)
  floor_log2,  ///< floor(log2(x)) of an FP32 (as FP32)
  ceil_log2,   ///< ceil(log2(x)) of an FP32 (as FP32)
};

/// "floor", "rceil", "ceil", "even" or "custom" (the IR text and the short text form).
const char* rule_name(ScaleRule r);

/// Name of an op as the canonical IR prints it.
const char* op_name(Op op);

/// A block: consecutive elements along `axes` share one scale.
///   1-D: axes {a}, sizes {32}; 2-D: axes {a0, a1}, sizes {32, 32};
///   jagged groups: axes {a}, sizes {0}, offsets named `offsets` (group ends, int32, on device).
struct BlockSpec {
  std::vector<int> axes;
  std::vector<int64_t> sizes;
  std::string offsets;  ///< non-empty for jagged groups: the name of the offsets input
  bool jagged() const { return !offsets.empty(); }
  /// Size along `axis` (1 when the axis is not blocked, 0 for a jagged axis).
  int64_t size_along(int axis) const;
  bool blocks_axis(int axis) const;
  std::string str() const;
  friend bool operator==(const BlockSpec&, const BlockSpec&) = default;
};

struct Node;
/// Nodes are shared and immutable.
using NodePtr = std::shared_ptr<const Node>;

/// One IR node. Attributes not used by an op keep their defaults (and are not printed).
struct Node {
  Op op = Op::constant;
  std::vector<NodePtr> args;
  std::string name;          ///< input / vec_input / dequant inputs
  DType dtype = DType::f32;  ///< input storage type
  int rank = 0;              ///< input rank (value rank for other nodes, filled by the builder)
  int axis = -1;             ///< vec_input: domain axis it runs along
  double value = 0;          ///< constant (always an exact FP32)
  BlockSpec block;           ///< blocks, dequant
  ElemFormat elem{};         ///< scale (target format), quantize, dequant
  ScaleFormat scale_format = ScaleFormat::e8m0;
  ScaleRule rule = ScaleRule::floor;
  NanPolicy policy = NanPolicy::nan_block;
  Round round = Round::nearest_even;
  Nvfp4Convention convention = Nvfp4Convention::te;
  uint64_t seed = 0, offset = 0;  ///< stochastic rounding
  bool flush_subnormals = false;  ///< quantize: FP32 subnormal inputs become +-0 first
  bool store_multiplier = false;  ///< FP32 scale: stores the multiplier r, not 1 / r (F32ScaleOptions)
  bool pow2 = false;              ///< FP32 scale: r rounded down to a power of two
  int depth = 1;                  ///< nesting depth of the expression under this node (filled by the builder)
  int64_t tree_nodes = 1;         ///< nodes under this one, a shared subexpression counted at every use
};

/// Canonical one-line text of a node and everything under it (used for printing and hashing).
std::string canonical(const NodePtr& n);

/// True for ops whose result does not depend on argument order.
bool commutative(Op op);

}  // namespace mxjit
