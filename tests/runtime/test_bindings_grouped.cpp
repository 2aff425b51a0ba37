// Launch checks of a pipeline with a grouped scale layout: the offsets input is accepted, the
// scale buffer is sized by the host-side upper bound (no offsets read), GPU launches refused.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "runtime/bindings.hpp"

using namespace mxjit;

TEST_CASE("check_bindings: grouped_blocked_128x4 takes its offsets input and the upper-bound size") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto p = pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::grouped_blocked_128x4(offsets("offs"), 0))});
  const int64_t M = 300, K = 96, G = 5;
  std::vector<uint8_t> xb(size_t(M * K * 2)), qb(size_t(M * K)), sb(size_t((384 + 128 * G) * 4));
  std::vector<int32_t> ends = {0, 100, 100, 250, 300};
  const TensorView xv = TensorView::contiguous(xb.data(), DType::bf16, {M, K});
  const TensorView ov = TensorView::contiguous(ends.data(), DType::i32, {G});
  const TensorView qv = TensorView::contiguous(qb.data(), DType::u8, {M, K});
  const TensorView sv = TensorView::contiguous(sb.data(), DType::u8, {int64_t(sb.size())});
  const std::vector<TensorView> in = {xv, ov}, out = {qv, sv};
  detail::Binding b = detail::check_bindings(p, in, out, DeviceKind::cpu);
  CHECK(b.groups == G);
  CHECK(b.outputs[1].storage_bytes == (384 + 128 * G) * 4);
  // a scale buffer sized without the groups' padding is refused, naming the output
  const TensorView small = TensorView::contiguous(sb.data(), DType::u8, {384 * 4});
  const std::vector<TensorView> bad_out = {qv, small};
  CHECK_THROWS_WITH_AS(detail::check_bindings(p, in, bad_out, DeviceKind::cpu), doctest::Contains("output 's'"),
                       UsageError);
  // the offsets must be int32
  std::vector<int64_t> e64(static_cast<size_t>(G), 0);
  const std::vector<TensorView> bad_in = {xv, TensorView::contiguous(e64.data(), DType::i64, {G})};
  CHECK_THROWS_WITH_AS(detail::check_bindings(p, bad_in, out, DeviceKind::cpu), doctest::Contains("input 'offs'"),
                       UsageError);
  // GPU launches are refused until the generator writes grouped layouts
  CHECK_THROWS_WITH_AS(detail::check_bindings(p, in, out, DeviceKind::cuda), doctest::Contains("CPU reference only"),
                       UsageError);
}
