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

/// What happens to values beyond the format's range.
enum class Saturate : uint8_t {
  finite,  ///< clamp to +-max normal, +-Inf included (the only mode the MX formats define)
  none,    ///< values that round beyond +-max normal and +-Inf become NaN (E4M3: 0x7F | sign) or
           ///< +-Inf (E5M2), as torch's `.to(float8_*)` does; formats with no NaN refuse it
};

/// The two NVFP4 conventions (docs/design.md §4), each bit-exact to its library.
enum class Nvfp4Convention : uint8_t { te, torchao };

/// Whether a block's amax sees NaN elements.
enum class AmaxNan : uint8_t {
  propagate,  ///< NaN if any element is NaN (torch.amax, OCP): the default
  ignore,     ///< NaN elements are skipped, as CUDA's fmaxf reduction (vLLM, SGLang, TE, Triton)
};

/// What the elements do with their block's factor.
enum class Apply : uint8_t {
  multiply,  ///< fp32(x * factor)
  divide,    ///< fp32(x / factor), IEEE division (vLLM's `x / y_s`)
};

/// A clamp of the scaled elements to [lo, hi] before the cast.
enum class Clamp : uint8_t {
  none,
  propagate_nan,  ///< min(max(v, lo), hi): NaN stays NaN (torch.clamp)
  ignore_nan,     ///< fminf(fmaxf(v, lo), hi): NaN becomes lo (CUDA's fminf/fmaxf, vLLM)
  ignore_nan_hi,  ///< fmaxf(fminf(v, hi), lo): NaN becomes hi (torchao's blockwise Triton kernels, measured)
};

/// Which library definition (dsl/recipes.hpp) a scale's expressions are, found when the scale is
/// built by comparing them with the library's: codegen has tuned code for these forms.
enum class ScaleRecipe : uint8_t {
  generic,         ///< any other expression: every backend interprets it
  e8m0_rule,       ///< an E8M0 rule (Node::rule, Node::policy)
  e8m0_exponent,   ///< an E8M0 scale 2^floor(e) of a user exponent expression (Node::exponent)
  f32_multiplier,  ///< the FP8 rowwise FP32 recipe (Node::pow2, Node::store_multiplier)
  nvfp4,           ///< NVFP4 (Node::convention)
};

/// Node kinds of the IR.
enum class Op : uint8_t {
  // value nodes: one FP32 per domain element
  input,      ///< a full-rank input tensor (name, dtype, rank)
  vec_input,  ///< a 1-D input broadcast along domain axis `axis`
  constant,   ///< an FP32 scalar
  neg, abs, relu, silu, gelu_tanh, gelu_erf, exp, sigmoid,
  round_to,   ///< the value rounded to Node::dtype (bf16 or f16, nearest even) and read back as FP32
  add, sub, mul, div, max, min,
  dequant,  ///< args: codes input (u8), scales input; decodes MX to FP32
  // block and scale nodes
  blocks,       ///< args: value; attribute: the block spec
  block_amax,   ///< args: blocks; max |x| per block
  tensor_amax,  ///< args: value; max |x| over the whole tensor
  scale,        ///< args: block_amax, stored, factor, zero_if, nan_if [, tensor_amax] (kScale*)
  quantize,     ///< args: value, scale
  // scale-expression nodes: FP32 functions of the block's amax (and the tensor amax)
  amax_var,    ///< the block's amax (FP32)
  tamax_var,   ///< the tensor amax of a two-level scale (FP32)
  stored_var,  ///< the stored scale as read back from its format (factor and flags only)
  floor_log2,  ///< floor(log2(x)) of an FP32 (as FP32); with Node::bits >= 0, of x rounded to that
               ///< many mantissa bits (RNE on the bit pattern; the carry moves to the next binade)
  ceil_log2,   ///< ceil(log2(x)) of an FP32 (as FP32)
  fmax, fmin,  ///< maximum / minimum ignoring NaN (CUDA fmaxf / fminf): NaN only if both are
  exp2,        ///< 2^floor(x), exactly (subnormal down to 2^-149, 0 below; +Inf from 2^128 on)
  pow2_floor,  ///< the largest power of two <= |x|, sign kept (subnormals exactly; 0, Inf, NaN kept)
  pow2_ceil,   ///< the smallest power of two >= |x|, sign kept (+Inf above 2^127; 0, Inf, NaN kept)
  select,      ///< args: condition, a, b: a where the condition holds, else b
  // conditions (scale expressions only): true or false, never NaN
  isnan, isinf,   ///< x is NaN / +-Inf
  eq, lt, le,     ///< x == y, x < y, x <= y (IEEE: false with a NaN operand)
  lor, land, lnot,
  never,          ///< the constant false (a scale without zero or NaN blocks)
};

/// Argument slots of an Op::scale node.
inline constexpr size_t kScaleAmax = 0;    ///< the block amax node
inline constexpr size_t kScaleStored = 1;  ///< FP32 expression of amax_var / tamax_var: the value stored
inline constexpr size_t kScaleFactor = 2;  ///< what elements are multiplied (or divided) by; may read stored_var
inline constexpr size_t kScaleZeroIf = 3;  ///< condition: the block's elements are all +0
inline constexpr size_t kScaleNanIf = 4;   ///< condition: the block's elements are all the NaN code
inline constexpr size_t kScaleTamax = 5;   ///< the tensor amax node, present iff an expression reads tamax_var

/// "floor", "rceil", "ceil", "even" or "custom" (the IR text and the short text form).
const char* rule_name(ScaleRule r);

/// Name of an op as the canonical IR prints it.
const char* op_name(Op op);

/// A block: consecutive elements along `axes` share one scale.
///   1-D: axes {a}, sizes {32}; 2-D: axes {a0, a1}, sizes {32, 32};
///   jagged groups: axes {a}, sizes {0}, offsets named `offsets` (group ends, int32, on device).
/// A block size meaning the whole axis, whatever its extent: one scale per row or column
/// (rowwise / axiswise FP8), or per tensor when every axis is blocked so (tensorwise).
inline constexpr int64_t kWholeAxis = -1;

struct BlockSpec {
  std::vector<int> axes;
  std::vector<int64_t> sizes;  ///< powers of two, or kWholeAxis
  std::string offsets;  ///< non-empty for jagged groups: the name of the offsets input
  bool jagged() const { return !offsets.empty(); }
  /// Size along `axis` (1 when the axis is not blocked, 0 for a jagged axis).
  int64_t size_along(int axis) const;
  bool blocks_axis(int axis) const;
  /// True when some axis is blocked whole (kWholeAxis).
  bool whole() const;
  /// True when every axis of a rank-`rank` domain is blocked whole: one block, the whole tensor
  /// (a tensorwise scale, whose amax the GPU takes from a pre-pass into the kernel's workspace).
  bool whole_tensor(int rank) const;
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
  Saturate saturate = Saturate::finite;  ///< quantize: what lies beyond the format's range becomes
  int bits = -1;                  ///< floor_log2: mantissa bits x is rounded to first (-1: none)
  // scale: how elements use the block's factor, and what the amax sees
  Apply apply = Apply::multiply;
  Clamp clamp = Clamp::none;
  double clamp_lo = 0, clamp_hi = 0;  ///< the clamp's bounds (exact FP32)
  AmaxNan amax_nan = AmaxNan::propagate;
  // scale: which library form the expressions are (derived when built; see ScaleRecipe)
  ScaleRecipe recipe = ScaleRecipe::generic;
  NodePtr exponent;  ///< ScaleRecipe::e8m0_exponent: the user's exponent expression of amax_var
};

/// The tensor amax node of a two-level scale node, or null.
const NodePtr& tensor_amax_of(const Node& scale);

/// True for condition nodes (isnan ... never).
bool is_condition(Op op);

/// The canonical text of a scale node's definition (its expressions and attributes, the amax and
/// tensor amax nodes left out): what recipes::recognise compares with the library's forms.
std::string scale_definition(const Node& scale);

/// Canonical one-line text of a node and everything under it (used for printing and hashing).
std::string canonical(const NodePtr& n);

/// True for ops whose result does not depend on argument order.
bool commutative(Op op);

}  // namespace mxjit
