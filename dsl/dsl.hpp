#pragma once
/// \file The embedded DSL: build an MX cast as values, then `pipeline({...})`.
///
/// ```cpp
/// using namespace mxjit;
/// auto x     = input("x", DType::bf16, rank(2));
/// auto blk   = blocks(x, /*axis=*/0, 32);
/// auto scale = e8m0_scale(amax(blk), e4m3, ScaleRule::rceil);
/// auto q     = cast(e4m3, x / scale);
/// auto p     = pipeline({output("q", q, layout::col_major()), output("s", scale)});
/// ```
/// Every builder checks its arguments and throws UsageError naming the input, axis and rule.
#include <array>
#include <optional>
#include <string>

#include "dsl/ir.hpp"
#include "dsl/layout.hpp"

namespace mxjit {

/// Rank of an input, bound at declaration; extents and strides are bound at launch.
struct Rank {
  int value;
};
/// `rank(2)`.
constexpr Rank rank(int r) { return Rank{r}; }

/// An element-wise FP32 value over the pipeline's domain.
class Expr {
 public:
  explicit Expr(NodePtr n) : node_(std::move(n)) {}
  /// Implicit from a scalar constant (stored as FP32; must be exactly representable? no: rounded RNE).
  Expr(double v);  // NOLINT(google-explicit-constructor)
  const NodePtr& node() const { return node_; }
  int rank() const { return node_->rank; }

 private:
  NodePtr node_;
};

/// A full-rank input tensor (bf16, f16 or f32).
Expr input(std::string name, DType dtype, Rank r);
/// A 1-D input of length n_axis broadcast along domain axis `axis` of a rank-`r` domain
/// (per-channel scales, biases).
Expr vec(std::string name, DType dtype, int axis, Rank r);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator-(Expr a);
/// Element-wise maximum / minimum (IEEE maxNum semantics are not used: NaN propagates).
Expr max(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr abs(Expr a);
Expr relu(Expr a);
/// x * sigmoid(x).
Expr silu(Expr a);
Expr sigmoid(Expr a);
Expr exp(Expr a);
/// Which GELU: the tanh approximation or the exact erf form.
enum class Gelu : uint8_t { tanh, erf };
Expr gelu(Expr a, Gelu kind = Gelu::tanh);
/// SwiGLU's gated product silu(gate) * up.
inline Expr swiglu(Expr gate, Expr up) { return silu(std::move(gate)) * std::move(up); }
/// `a` rounded to `dtype` (bf16 or f16: nearest even, overflow to Inf, NaN stays NaN) and read back
/// as FP32: an intermediate that a peer's kernel keeps in the input's type, e.g. SGLang's and
/// vLLM's fused `T(silu(gate)) * up`, which is round_to(round_to(silu(gate), bf16) * up, bf16).
Expr round_to(Expr a, DType dtype);

/// The block's amax inside a user scale expression.
Expr amax_var();
/// The tensor amax inside a two-level scale expression (NVFP4's per-tensor scale).
Expr tamax_var();
/// The stored scale as read back from its format (e.g. the E4M3 block scale's value), inside a
/// factor or a block condition.
Expr stored_var();
/// floor(log2(x)) / ceil(log2(x)) of an FP32, for user scale expressions (exact; of 0: -Inf, of
/// a negative or NaN: NaN, of +Inf: +Inf).
Expr floor_log2(Expr a);
Expr ceil_log2(Expr a);
/// floor(log2(x)) once x's significand is rounded to `mbits` bits, ties to even, on its bit
/// pattern (a carry moves to the next binade; subnormals round at 2^(-126 - mbits)): the EVEN rule.
Expr floor_log2(Expr a, int mbits);
/// Maximum / minimum ignoring NaN, as CUDA's fmaxf / fminf (NaN only when both are NaN;
/// fmax(-0, +0) = +0, fmin = -0).
Expr fmax(Expr a, Expr b);
Expr fmin(Expr a, Expr b);
/// 2^floor(e), exactly: subnormal down to 2^-149, 0 below that and for -Inf, +Inf from 2^128
/// on, NaN for NaN. The power of two an exponent expression names.
Expr exp2(Expr e);
/// The largest power of two <= |x| with x's sign (subnormals exactly; +-0, +-Inf and NaN stay),
/// e.g. Transformer Engine's `bits & 0xFF800000` on a normal x.
Expr pow2_floor(Expr a);
/// The smallest power of two >= |x| with x's sign (subnormals exactly; +Inf above 2^127; +-0,
/// +-Inf and NaN stay): the exponent-bit ceil of DeepGEMM, vLLM and SGLang on a normal x.
Expr pow2_ceil(Expr a);
/// min(max(x, lo), hi), NaN propagating.
inline Expr clamp(Expr x, Expr lo, Expr hi) { return min(max(std::move(x), std::move(lo)), std::move(hi)); }

/// A condition inside a scale expression: true or false per block, never NaN.
class Cond {
 public:
  explicit Cond(NodePtr n) : node_(std::move(n)) {}
  const NodePtr& node() const { return node_; }

 private:
  NodePtr node_;
};
/// x is NaN; x is +-Inf.
Cond isnan(Expr x);
Cond isinf(Expr x);
/// IEEE comparisons (false when an operand is NaN).
Cond operator==(Expr a, Expr b);
Cond operator<(Expr a, Expr b);
Cond operator<=(Expr a, Expr b);
inline Cond operator>(Expr a, Expr b) { return std::move(b) < std::move(a); }
inline Cond operator>=(Expr a, Expr b) { return std::move(b) <= std::move(a); }
Cond operator||(Cond a, Cond b);
Cond operator&&(Cond a, Cond b);
Cond operator!(Cond a);
/// The condition that never holds.
Cond never();
/// `a` where `c` holds, else `b` (per block; both sides are evaluated, as a select).
Expr where(Cond c, Expr a, Expr b);

/// Group ends along an axis (int32 device tensor, cumulative ends, like torch's `offs`).
struct Offsets {
  std::string name;
};
/// `offsets("offs")`.
inline Offsets offsets(std::string name) { return Offsets{std::move(name)}; }

/// A value cut into blocks that each share one scale.
class Blocks {
 public:
  explicit Blocks(NodePtr n) : node_(std::move(n)) {}
  const NodePtr& node() const { return node_; }
  Expr value() const { return Expr(node_->args[0]); }

 private:
  NodePtr node_;
};

/// 1-D blocks of `size` (a power of two) consecutive elements along `axis`.
Blocks blocks(Expr x, int axis, int64_t size);
/// 2-D blocks (e.g. 32x32 for MXFP8 weights, 16x16 for NVFP4).
Blocks blocks(Expr x, std::array<int, 2> axes, std::array<int64_t, 2> sizes);
/// Jagged groups along `axis`, ends given by a device offsets array (MoE token groups): each group
/// is one block per position of the other axes (per-group per-column scales).
Blocks groups(Expr x, int axis, Offsets ends);

/// max |x| per block, or over the whole tensor.
class Amax {
 public:
  explicit Amax(NodePtr n) : node_(std::move(n)) {}
  const NodePtr& node() const { return node_; }

 private:
  NodePtr node_;
};
Amax amax(Blocks b);
/// Tensor-wide amax (an optional output; NVFP4's per-tensor scale uses it).
Amax amax(Expr x);
/// Tensor-wide amax whose NaN elements propagate (as amax(x)) or, with AmaxNan::ignore, are
/// skipped (CUDA fmaxf's reduction): the pre-pass of a tensorwise scale with that policy.
Amax amax(Expr x, AmaxNan nan);

/// One scale per block.
class Scale {
 public:
  explicit Scale(NodePtr n) : node_(std::move(n)) {}
  const NodePtr& node() const { return node_; }

 private:
  NodePtr node_;
};
/// An E8M0 (power-of-two) scale for elements of `elem` under `rule`.
Scale e8m0_scale(Amax block_amax, ElemFormat elem, ScaleRule rule, NanPolicy policy = NanPolicy::nan_block);
/// An E8M0 scale whose unbiased exponent is the user expression `exponent` of `amax_var()`
/// (e.g. `ceil_log2(amax_var() * (1.0 / 448)) + 1`); clamped to [-127, 127].
Scale e8m0_scale(Amax block_amax, ElemFormat elem, Expr exponent, NanPolicy policy = NanPolicy::nan_block);
/// What an FP32 scale stores. By default the dequantization scale s = 1 / r of the multiplier
/// r = max_normal / max(amax, 1e-12) that elements are encoded with (what DeepGEMM and TE read);
/// torchao's FP8 rowwise / per-group kernels return r itself and may round it down to a power of two.
struct F32ScaleOptions {
  bool store_multiplier = false;  ///< store r (torchao) instead of 1 / r
  bool pow2 = false;              ///< r rounded down to a power of two (exactly, by its exponent bits) first
};
/// An FP32 scale: r = max_normal / max(amax, 1e-12) (FP8 rowwise / per-group recipes); stores 1 / r,
/// or r with `options.store_multiplier`; elements are encoded from x * r.
Scale f32_scale(Amax block_amax, ElemFormat elem, F32ScaleOptions options = {});
/// NVFP4: E4M3 block scale under an FP32 per-tensor scale from the tensor amax (docs/design.md §4).
Scale nvfp4_scale(Amax block_amax, Nvfp4Convention convention);

/// A scale written as the FP32 operations a recipe runs (the library of recipes is
/// dsl/recipes.hpp; every rule above is one of its definitions):
///
///     amax    = max |x| over the block (NaN propagates, or with AmaxNan::ignore is skipped)
///     stored  = S(amax_var, tamax_var)               written to the scale output in `format`
///     s^      = stored as read back from `format`    (stored_var)
///     factor  = F(amax_var, tamax_var, stored_var)   default 1 / stored_var
///     element = clamp(x * factor)  or  clamp(x / factor) with Apply::divide, then the cast
///
/// In blocks where `zero_if` holds every element is +0, where `nan_if` holds every element is
/// the format's NaN code (conditions of amax_var, tamax_var and stored_var). Every operation
/// rounds once in FP32 (IEEE +, -, *, /); constants are FP32.
struct ScaleDef {
  ScaleFormat format = ScaleFormat::f32;  ///< how `stored` is written (E8M0: powers of two only)
  std::optional<Expr> stored;             ///< required
  std::optional<Expr> factor;             ///< default 1 / stored_var()
  Apply apply = Apply::multiply;
  std::optional<Cond> zero_if;            ///< default never
  std::optional<Cond> nan_if;             ///< default never
  Clamp clamp = Clamp::none;              ///< of the scaled elements, to [clamp_lo, clamp_hi]
  double clamp_lo = 0, clamp_hi = 0;
  AmaxNan amax_nan = AmaxNan::propagate;
};
/// The scale `def` for elements of `elem`. Throws UsageError naming the part of `def` that is not
/// a valid scale (an expression reading what it may not, a non-power-of-two E8M0 value, ...).
Scale scale(Amax block_amax, ElemFormat elem, const ScaleDef& def);

/// A value divided by its scale, ready for `cast`.
struct Scaled {
  Expr value;
  Scale scale;
};
inline Scaled operator/(Expr x, Scale s) { return Scaled{std::move(x), std::move(s)}; }

/// Options of a cast beyond format and rounding.
struct CastOptions {
  uint64_t seed = 0;              ///< stochastic rounding seed
  uint64_t offset = 0;            ///< stochastic rounding offset (e.g. the step)
  bool flush_subnormals = false;  ///< FP32 subnormal values become +-0 before the cast
};

/// Quantized elements.
class Quantized {
 public:
  explicit Quantized(NodePtr n) : node_(std::move(n)) {}
  const NodePtr& node() const { return node_; }
  Scale scale() const { return Scale(node_->args[1]); }

 private:
  NodePtr node_;
};
/// Casts `x / scale` to `elem`. The value must be the one the scale's blocks were taken of.
/// Saturate::none needs a format with NaN (E4M3, E5M2).
Quantized cast(ElemFormat elem, Scaled scaled, Round round = Round::nearest_even,
               Saturate sat = Saturate::finite, CastOptions options = {});

/// Decodes MX codes (input `codes`, u8; FP4 packed two per byte along the block axis) with their
/// scales (input `scales`, u8 for E8M0/E4M3 or f32, linear layout) back to FP32 values.
Expr dequantize(std::string codes, std::string scales, ElemFormat elem, ScaleFormat scale_format, Rank r,
                int axis, int64_t block);

}  // namespace mxjit
