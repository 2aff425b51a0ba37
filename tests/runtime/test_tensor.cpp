#include <doctest/doctest.h>

#include <dlpack/dlpack.h>

#include <string>

#include "dsl/errors.hpp"
#include "runtime/tensor.hpp"

using namespace mxjit;

TEST_CASE("TensorView::contiguous has row-major strides") {
  float buf[8 * 4];
  TensorView v = TensorView::contiguous(buf, DType::f32, {8, 4});
  CHECK(v.rank() == 2);
  CHECK(v.numel() == 32);
  CHECK(v.strides == std::vector<int64_t>{4, 1});
  CHECK(v.is_contiguous());
  CHECK(v.describe() == "f32[8,4] strides [4,1] on cpu");

  TensorView g = TensorView::contiguous(nullptr, DType::bf16, {128, 64}, DeviceKind::cuda, 0);
  CHECK(g.describe() == "bf16[128,64] strides [64,1] on cuda:0");

  TensorView s = TensorView::contiguous(nullptr, DType::i64, {});
  CHECK(s.rank() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.is_contiguous());
}

TEST_CASE("TensorView::strided") {
  TensorView t = TensorView::strided(nullptr, DType::f16, {4, 8}, {1, 4});  // transposed
  CHECK_FALSE(t.is_contiguous());
  CHECK(TensorView::strided(nullptr, DType::f16, {4, 1}, {1, 99}).is_contiguous());
  CHECK(t.describe() == "f16[4,8] strides [1,4] on cpu");
  CHECK_THROWS_AS(TensorView::strided(nullptr, DType::f16, {4, 8}, {1}), UsageError);
  CHECK_THROWS_AS(TensorView::contiguous(nullptr, DType::f16, {-1}), UsageError);
}

namespace {
DLTensor make_dl(void* data, DLDataTypeCode code, uint8_t bits, int64_t* shape, int ndim,
                 int64_t* strides = nullptr, uint64_t byte_offset = 0, DLDeviceType dev = kDLCPU) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{dev, dev == kDLCUDA ? 1 : 0};
  t.ndim = ndim;
  t.dtype = DLDataType{static_cast<uint8_t>(code), bits, 1};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = byte_offset;
  return t;
}
}  // namespace

TEST_CASE("from_dlpack: dtypes, contiguous, strided, byte_offset, devices") {
  alignas(16) char buf[1024];
  int64_t shape[2] = {16, 8};
  TensorView v = from_dlpack(make_dl(buf, kDLBfloat, 16, shape, 2));
  CHECK(v.dtype == DType::bf16);
  CHECK(v.data == buf);
  CHECK(v.strides == std::vector<int64_t>{8, 1});
  CHECK(v.is_contiguous());
  CHECK(v.device == DeviceKind::cpu);

  CHECK(from_dlpack(make_dl(buf, kDLFloat, 16, shape, 2)).dtype == DType::f16);
  CHECK(from_dlpack(make_dl(buf, kDLFloat, 32, shape, 2)).dtype == DType::f32);
  CHECK(from_dlpack(make_dl(buf, kDLUInt, 8, shape, 2)).dtype == DType::u8);
  CHECK(from_dlpack(make_dl(buf, kDLInt, 32, shape, 2)).dtype == DType::i32);
  CHECK(from_dlpack(make_dl(buf, kDLInt, 64, shape, 2)).dtype == DType::i64);

  int64_t strides[2] = {1, 16};
  TensorView s = from_dlpack(make_dl(buf, kDLFloat, 32, shape, 2, strides, 64, kDLCUDA));
  CHECK(s.strides == std::vector<int64_t>{1, 16});
  CHECK_FALSE(s.is_contiguous());
  CHECK(s.data == buf + 64);
  CHECK(s.device == DeviceKind::cuda);
  CHECK(s.device_ordinal == 1);
  CHECK(s.describe() == "f32[16,8] strides [1,16] on cuda:1");
}

TEST_CASE("from_dlpack rejects lanes, unknown dtypes and devices with the rule in words") {
  char buf[64];
  int64_t shape[1] = {4};
  DLTensor t = make_dl(buf, kDLFloat, 32, shape, 1);
  t.dtype.lanes = 4;
  try {
    from_dlpack(t);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("lanes=4") != std::string::npos);
    CHECK(std::string(e.what()).find("lanes == 1") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(from_dlpack(make_dl(buf, kDLFloat, 64, shape, 1)),
                       doctest::Contains("not supported"), UsageError);
  CHECK_THROWS_AS(from_dlpack(make_dl(buf, kDLComplex, 64, shape, 1)), UsageError);
  CHECK_THROWS_WITH_AS(from_dlpack(make_dl(buf, kDLFloat, 32, shape, 1, nullptr, 0, kDLOpenCL)),
                       doctest::Contains("kDLCPU or kDLCUDA"), UsageError);
}
