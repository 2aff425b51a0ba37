#include "runtime/tensor.hpp"

#include <dlpack/dlpack.h>

#include <limits>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit {

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  // Strides past INT64_MAX (an empty tensor with huge other extents: no element to address) are 0.
  std::optional<int64_t> s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s.value_or(0);
    if (s) s = checked_mul(*s, shape[i] > 0 ? shape[i] : 1);
  }
  return strides;
}

void check_shape(const std::vector<int64_t>& shape) {
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 0)
      throw UsageError(fmt::format("tensor extent {} of dimension {} is negative", shape[i], i));
}

DType dlpack_dtype(DLDataType t) {
  if (t.lanes != 1)
    throw UsageError(fmt::format(
        "DLPack tensor has lanes={}: mxjit takes only scalar element types (lanes == 1)", t.lanes));
  switch (t.code) {
    case kDLBfloat:
      if (t.bits == 16) return DType::bf16;
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::f16;
      if (t.bits == 32) return DType::f32;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::u8;
      break;
    case kDLInt:
      if (t.bits == 32) return DType::i32;
      if (t.bits == 64) return DType::i64;
      break;
#if defined(DLPACK_MAJOR_VERSION) && (DLPACK_MAJOR_VERSION > 1 || DLPACK_MINOR_VERSION >= 1)
    case kDLFloat8_e3m4: case kDLFloat8_e4m3: case kDLFloat8_e4m3b11fnuz: case kDLFloat8_e4m3fn:
    case kDLFloat8_e4m3fnuz: case kDLFloat8_e5m2: case kDLFloat8_e5m2fnuz: case kDLFloat8_e8m0fnu:
      if (t.bits == 8) return DType::u8;  // MX codes are stored as bytes
      break;
    case kDLFloat6_e2m3fn: case kDLFloat6_e3m2fn: case kDLFloat4_e2m1fn:
      if (t.bits == 8) return DType::u8;  // one code per byte as stored by the producer
      break;
#endif
    default:
      break;
  }
  throw UsageError(fmt::format(
      "DLPack dtype (code {}, bits {}) is not supported: mxjit takes bfloat16, float16/32, uint8, "
      "int32/64 (and 8-bit float codes as uint8)",
      static_cast<int>(t.code), static_cast<int>(t.bits)));
}

}  // namespace

int64_t TensorView::numel() const {
  for (int64_t e : shape)
    if (e <= 0) return 0;
  int64_t n = 1;
  for (int64_t e : shape) n = checked_mul(n, e).value_or(std::numeric_limits<int64_t>::max());
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect = checked_mul(expect, shape[i]).value_or(std::numeric_limits<int64_t>::max());
  }
  return true;
}

TensorView TensorView::contiguous(void* data, DType dtype, std::vector<int64_t> shape,
                                  DeviceKind device, int ordinal) {
  check_shape(shape);
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.strides = row_major_strides(shape);
  v.shape = std::move(shape);
  v.device = device;
  v.device_ordinal = ordinal;
  return v;
}

TensorView TensorView::strided(void* data, DType dtype, std::vector<int64_t> shape,
                               std::vector<int64_t> strides, DeviceKind device, int ordinal) {
  check_shape(shape);
  if (shape.size() != strides.size())
    throw UsageError(fmt::format("tensor has {} extents but {} strides: they must match",
                                 shape.size(), strides.size()));
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.strides = std::move(strides);
  v.device = device;
  v.device_ordinal = ordinal;
  return v;
}

std::string TensorView::describe() const {
  return fmt::format("{}[{}] strides [{}] on {}", dtype_name(dtype), fmt::join(shape, ","),
                     fmt::join(strides, ","),
                     device == DeviceKind::cpu ? std::string("cpu")
                                               : fmt::format("cuda:{}", device_ordinal));
}

TensorView from_dlpack(const DLTensor& t) {
  DType dtype = dlpack_dtype(t.dtype);
  DeviceKind device;
  switch (t.device.device_type) {
    case kDLCPU: device = DeviceKind::cpu; break;
    case kDLCUDA: device = DeviceKind::cuda; break;
    default:
      throw UsageError(fmt::format(
          "DLPack device type {} is not supported: mxjit takes kDLCPU or kDLCUDA tensors",
          static_cast<int>(t.device.device_type)));
  }
  if (t.ndim < 0) throw UsageError(fmt::format("DLPack tensor has negative ndim {}", t.ndim));
  if (t.ndim > 0 && !t.shape) throw UsageError("DLPack tensor has ndim > 0 but no shape");
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  void* data = t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr;
  int ordinal = device == DeviceKind::cuda ? t.device.device_id : 0;
  if (!t.strides) return TensorView::contiguous(data, dtype, std::move(shape), device, ordinal);
  std::vector<int64_t> strides(t.strides, t.strides + t.ndim);
  return TensorView::strided(data, dtype, std::move(shape), std::move(strides), device, ordinal);
}

}  // namespace mxjit
