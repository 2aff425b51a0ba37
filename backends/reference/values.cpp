#include "backends/reference/values.hpp"

#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "backends/reference/blocking.hpp"
#include "backends/reference/numerics.hpp"
#include "templates/mx_math.cuh"

namespace mxjit::reference {

std::vector<int64_t> strided_offsets(std::span<const int64_t> shape, std::span<const int64_t> strides) {
  const int rank = int(shape.size());
  const int64_t n = product(shape);
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t off = 0;
  for (int64_t lin = 0; lin < n; ++lin) {
    out[size_t(lin)] = off;
    for (int a = rank - 1; a >= 0; --a) {
      if (++idx[a] < shape[a]) {
        off += strides[a];
        break;
      }
      off -= (shape[a] - 1) * strides[a];
      idx[a] = 0;
    }
  }
  return out;
}

float load_as_f32(const TensorView& v, int64_t offset) {
  switch (v.dtype) {
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(v.data)[offset]);
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(v.data)[offset]);
    case DType::f32: return static_cast<const float*>(v.data)[offset];
    default: break;
  }
  throw Error(fmt::format("mxjit internal: load_as_f32 of a {} view", dtype_name(v.dtype)));
}

float flush_subnormal(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

ValueEvaluator::ValueEvaluator(const Pipeline& p, std::span<const TensorView> inputs, std::vector<int64_t> domain)
    : pipeline_(p), inputs_(inputs), domain_(std::move(domain)), numel_(product(domain_)) {}

const TensorView& ValueEvaluator::input(const std::string& name) const {
  const int i = pipeline_.input_index(name);
  if (i < 0) throw Error(fmt::format("mxjit internal: no input named '{}'", name));
  return inputs_[size_t(i)];
}

const std::vector<float>& ValueEvaluator::values(const NodePtr& n) {
  auto it = memo_.find(n.get());
  if (it != memo_.end()) return it->second;
  std::vector<float> v = evaluate(n);
  return memo_.emplace(n.get(), std::move(v)).first->second;
}

std::vector<float> ValueEvaluator::read_input(const Node& n) const {
  const TensorView& view = input(n.name);
  const std::vector<int64_t> offs = strided_offsets(domain_, view.strides);
  std::vector<float> out(offs.size());
  for (size_t i = 0; i < offs.size(); ++i) out[i] = load_as_f32(view, offs[i]);
  return out;
}

std::vector<float> ValueEvaluator::read_vector(const Node& n) const {
  const TensorView& view = input(n.name);
  std::vector<int64_t> strides(domain_.size(), 0);
  strides[size_t(n.axis)] = view.strides[0];
  const std::vector<int64_t> offs = strided_offsets(domain_, strides);
  std::vector<float> out(offs.size());
  for (size_t i = 0; i < offs.size(); ++i) out[i] = load_as_f32(view, offs[i]);
  return out;
}

std::vector<float> ValueEvaluator::dequantize(const Node& n) const {
  const TensorView& codes = input(n.args[0]->name);
  const TensorView& scales = input(n.args[1]->name);
  const int axis = n.block.axes[0];
  const int64_t block = n.block.sizes[0];
  const bool packed = n.elem.packed();
  const int rank = int(domain_.size());
  std::vector<float> out(static_cast<size_t>(numel_));
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t lin = 0; lin < numel_; ++lin) {
    int64_t coff = 0, soff = 0;
    for (int a = 0; a < rank; ++a) {
      const int64_t i = idx[a];
      coff += (a == axis && packed ? i / 2 : i) * codes.strides[a];
      soff += (a == axis ? i / block : i) * scales.strides[a];
    }
    uint8_t code = static_cast<const uint8_t*>(codes.data)[coff];
    if (packed) code = uint8_t((idx[axis] % 2 ? code >> 4 : code) & 0x0F);
    float scale;
    switch (n.scale_format) {
      case ScaleFormat::e8m0: scale = e8m0_value(static_cast<const uint8_t*>(scales.data)[soff]); break;
      case ScaleFormat::e4m3: scale = e4m3_decode(static_cast<const uint8_t*>(scales.data)[soff]); break;
      default: scale = static_cast<const float*>(scales.data)[soff]; break;
    }
    out[size_t(lin)] = mx_fmul(float(decode(n.elem, code)), scale);
    for (int a = rank - 1; a >= 0; --a) {
      if (++idx[a] < domain_[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

std::vector<float> ValueEvaluator::evaluate(const NodePtr& np) {
  const Node& n = *np;
  auto unary = [&](auto f) {
    std::vector<float> out = values(n.args[0]);
    for (float& x : out) x = f(x);
    return out;
  };
  auto binary = [&](auto f) {
    const std::vector<float>& a = values(n.args[0]);
    const std::vector<float>& b = values(n.args[1]);
    // A scalar (size 1) broadcasts; an empty domain's values are empty, whatever the scalar.
    const size_t size = a.size() == 1 ? b.size() : b.size() == 1 ? a.size() : std::min(a.size(), b.size());
    std::vector<float> out(size);
    for (size_t i = 0; i < size; ++i) out[i] = f(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]);
    return out;
  };
  switch (n.op) {
    case Op::input: return read_input(n);
    case Op::vec_input: return read_vector(n);
    case Op::constant: return {float(n.value)};
    case Op::dequant: return dequantize(n);
    case Op::neg: return unary([](float x) { return -x; });
    case Op::abs: return unary([](float x) { return mx_fabs(x); });
    case Op::relu: return unary([](float x) { return mx_relu(x); });
    case Op::silu: return unary([](float x) { return mx_silu(x); });
    case Op::gelu_tanh: return unary([](float x) { return mx_gelu_tanh(x); });
    case Op::gelu_erf: return unary([](float x) { return mx_gelu_erf(x); });
    case Op::exp: return unary([](float x) { return mx_exp(x); });
    case Op::sigmoid: return unary([](float x) { return mx_sigmoid(x); });
    case Op::round_to:
      if (n.dtype == DType::bf16) return unary([](float x) { return mx_round_bf16(x); });
      return unary([](float x) { return mx_round_f16(x); });
    case Op::add: return binary([](float a, float b) { return mx_fadd(a, b); });
    case Op::sub: return binary([](float a, float b) { return mx_fsub(a, b); });
    case Op::mul: return binary([](float a, float b) { return mx_fmul(a, b); });
    case Op::div: return binary([](float a, float b) { return mx_fdiv(a, b); });
    case Op::max: return binary([](float a, float b) { return mx_fmax_nan(a, b); });
    case Op::min: return binary([](float a, float b) { return mx_fmin_nan(a, b); });
    default: break;
  }
  throw UsageError(fmt::format("reference: '{}' is not a value expression; only inputs, constants, arithmetic, "
                               "activations and dequantize produce per-element values",
                               op_name(n.op)));
}

}  // namespace mxjit::reference
