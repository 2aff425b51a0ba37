// Launch checks against the size limits (issue 36): a view past 2^40 elements, or whose strides
// address bytes past the end of the address space, is a UsageError naming it, on the GPU launch
// path, the CPU backend and the reference alike; empty views of huge extents are fine.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "runtime/bindings.hpp"
#include "backends/reference/executor.hpp"

using namespace mxjit;

namespace {

constexpr int64_t k2p62 = int64_t(1) << 62;

std::string binding_error(const Pipeline& p, const std::vector<TensorView>& in, const std::vector<TensorView>& out) {
  try {
    detail::check_bindings(p, in, out, DeviceKind::cpu);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string reference_error(const Pipeline& p, const std::vector<TensorView>& in, const std::vector<TensorView>& out) {
  try {
    reference::run(p, in, out);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("limits: element counts and strides of views never overflow") {
  TensorView v = TensorView::contiguous(nullptr, DType::f32, {0, k2p62, k2p62});
  CHECK(v.numel() == 0);
  CHECK(v.strides == std::vector<int64_t>{0, k2p62, 1});
  v = TensorView::contiguous(nullptr, DType::f32, {k2p62, k2p62, 0});
  CHECK(v.numel() == 0);
  CHECK(v.is_contiguous());
  v = TensorView::contiguous(nullptr, DType::f32, {k2p62, 4});
  CHECK(v.numel() == std::numeric_limits<int64_t>::max());  // 2^64 saturates (and fails the element limit)
}

TEST_CASE("limits: a view past 2^40 elements or past the address space is refused by name") {
  const Pipeline p = parse_pipeline("f32[2] -> mxfp8.e4m3");
  std::vector<uint8_t> buf(4096);
  const TensorView big = TensorView::contiguous(buf.data(), DType::f32, {int64_t(1) << 21, int64_t(1) << 20});
  const TensorView q = TensorView::contiguous(buf.data() + 1024, DType::u8, {4, 4});
  const TensorView s = TensorView::contiguous(buf.data() + 2048, DType::u8, {4, 1});
  std::string m = binding_error(p, {big}, {q, s});
  CHECK(has(m, "input 'x': extents [2097152,1048576] hold more than 2^40 elements, the limit of one tensor"));
  m = reference_error(p, {big}, {q, s});
  CHECK(has(m, "input 'x': extents [2097152,1048576] hold more than 2^40 elements"));
  // Strides that reach past the address space: offsets computed from them would wrap.
  const TensorView far = TensorView::strided(buf.data(), DType::f32, {4, 4}, {k2p62, 1});
  m = binding_error(p, {far}, {q, s});
  CHECK(has(m, "input 'x': extents [4,4] with strides [4611686018427387904,1] reach past the end of the address space"));
  m = reference_error(p, {far}, {q, s});
  CHECK(has(m, "reach past the end of the address space"));
}

TEST_CASE("limits: an empty domain of huge extents binds, with empty outputs") {
  const Pipeline p = parse_pipeline("f32[3] -> mxfp8.e4m3 ; mxfp8.e4m3 blocks(1,32) q:col_major s:blocked128x4 amax");
  std::vector<uint8_t> buf(256);
  const std::vector<int64_t> shape = {k2p62, k2p62, 0};
  std::vector<TensorView> outs;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const OutputGeometry g = output_geometry(p, int(o), shape);
    outs.push_back(TensorView::strided(buf.data() + 64 * o, p.outputs()[o].dtype, g.view_shape, g.view_strides));
  }
  const std::vector<TensorView> ins = {TensorView::contiguous(buf.data(), DType::f32, shape)};
  const detail::Binding b = detail::check_bindings(p, ins, outs, DeviceKind::cpu);
  CHECK(b.empty);
  for (const OutputGeometry& g : b.outputs) CHECK(g.storage_bytes <= 4);
}
