// Launch checks of a pipeline with a grouped scale layout: the offsets input is accepted, the
// scale buffer is sized by the host-side upper bound (no offsets read), on the CPU and the GPU.
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
  // GPU launches take the same views on the device (the checks read no memory)
  auto on_cuda = [](TensorView v) {
    v.device = DeviceKind::cuda;
    return v;
  };
  const std::vector<TensorView> din = {on_cuda(xv), on_cuda(ov)}, dout = {on_cuda(qv), on_cuda(sv)};
  CHECK(detail::check_bindings(p, din, dout, DeviceKind::cuda).outputs[1].storage_bytes == (384 + 128 * G) * 4);
}

TEST_CASE("check_bindings: each grouped scale output is sized by the groups of its own offsets input") {
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  auto p = pipeline({output("s0", s0, layout::grouped_blocked_128x4(offsets("rows"), 0)),
                     output("s1", s1, layout::grouped_blocked_128x4(offsets("cols"), 1))});
  const int64_t M = 64, K = 96;
  std::vector<uint8_t> xb(size_t(M * K * 2));
  std::vector<int32_t> rows = {10, 20, 64}, cols = {96};
  // s0: rows groups, (roundup(64,128) + 128*3) * roundup(96/32,4); s1: groups along its rows
  // (axis 1), (roundup(96,128) + 128*1) * roundup(64/32,4).
  std::vector<uint8_t> b0(size_t((128 + 128 * 3) * 4)), b1(size_t((128 + 128) * 4));
  const std::vector<TensorView> in = {TensorView::contiguous(xb.data(), DType::bf16, {M, K}),
                                      TensorView::contiguous(rows.data(), DType::i32, {3}),
                                      TensorView::contiguous(cols.data(), DType::i32, {1})};
  const std::vector<TensorView> out = {TensorView::contiguous(b0.data(), DType::u8, {int64_t(b0.size())}),
                                       TensorView::contiguous(b1.data(), DType::u8, {int64_t(b1.size())})};
  REQUIRE(p.inputs()[1].name == "rows");
  detail::Binding b = detail::check_bindings(p, in, out, DeviceKind::cpu);
  CHECK(b.outputs[0].storage_bytes == int64_t(b0.size()));
  CHECK(b.outputs[1].storage_bytes == int64_t(b1.size()));
  // The launch's 32-bit bound on padded rows (Plan::launch) takes the larger offsets input, not the last.
  CHECK(b.groups == 3);
}
