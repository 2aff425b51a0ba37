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

/// The block's amax inside a user scale expression.
Expr amax_var();
/// floor(log2(x)) / ceil(log2(x)) of an FP32, for user scale expressions.
Expr floor_log2(Expr a);
Expr ceil_log2(Expr a);

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
Quantized cast(ElemFormat elem, Scaled scaled, Round round = Round::nearest_even,
               Saturate sat = Saturate::finite, CastOptions options = {});

/// Decodes MX codes (input `codes`, u8; FP4 packed two per byte along the block axis) with their
/// scales (input `scales`, u8 for E8M0/E4M3 or f32, linear layout) back to FP32 values.
Expr dequantize(std::string codes, std::string scales, ElemFormat elem, ScaleFormat scale_format, Rank r,
                int axis, int64_t block);

}  // namespace mxjit
