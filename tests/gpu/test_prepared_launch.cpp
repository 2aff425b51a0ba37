// Kernel::operator() on a geometry it launched before reuses the prepared launch: results stay bit-exact
// at new addresses and after the inputs' 16-byte alignment class changes, and a bad pointer is still
// refused with the message of the full check (nothing launched).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "check.hpp"
#include "dsl/errors.hpp"
#include "runtime/bindings.hpp"

using namespace mxjit;
using namespace mxjit::test;

namespace {

Kernel dim0_kernel() {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  return jit(pipeline({output("q", cast(e4m3, x / s)), output("s", s)}));
}

std::string refusal(const Kernel& k, const std::vector<TensorView>& in, const std::vector<TensorView>& out) {
  try {
    k(0, std::span<const TensorView>(in), std::span<const TensorView>(out));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

std::string full_check(const Kernel& k, const std::vector<TensorView>& in, const std::vector<TensorView>& out) {
  try {
    detail::check_bindings(k.pipeline(), in, out, DeviceKind::cuda);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a launched geometry stays bit-exact at new addresses and alignment classes") {
  MXJIT_REQUIRE_GPU();
  const Kernel k = dim0_kernel();
  HostTensor x(DType::bf16, {96, 160});
  fill_random(x, 7, true);
  std::vector<HostTensor> in = {x};
  // Aligned, then 2 bytes past (not 16-byte aligned: other loads), then 16 past, then aligned again.
  for (size_t shift : {0, 2, 16, 0, 2}) {
    CAPTURE(shift);
    CHECK(check_against_reference(k, in, "prepared", {}, 0, nullptr, 0, shift) == 0);
  }
}

TEST_CASE("a launched geometry still refuses bad pointers with the full check's message") {
  MXJIT_REQUIRE_GPU();
  const Kernel k = dim0_kernel();
  HostTensor hx(DType::bf16, {64, 64}), hq(DType::u8, {64, 64}), hs(DType::u8, {64, 2});
  fill_random(hx, 3, false);
  DeviceTensor x = DeviceTensor::of(hx), q = DeviceTensor::of(hq), s = DeviceTensor::of(hs);
  const std::vector<TensorView> in = {x.v}, out = {q.v, s.v};
  k(0, in, out);  // prepared now
  k(0, in, out);
  Stream::null().synchronize();
  auto moved = [](TensorView v, uintptr_t to) {
    v.data = reinterpret_cast<void*>(to);
    return v;
  };
  const uintptr_t xa = reinterpret_cast<uintptr_t>(x.v.data), qa = reinterpret_cast<uintptr_t>(q.v.data);
  const std::vector<std::pair<std::vector<TensorView>, std::vector<TensorView>>> bad = {
      {{moved(x.v, 0)}, out},                    // null input
      {in, {moved(q.v, 0), s.v}},                // null output
      {{moved(x.v, xa + 1)}, out},               // input not aligned to its element
      {in, {moved(q.v, xa + 64), s.v}},          // codes overlap the input
      {in, {q.v, moved(s.v, qa + 100)}},         // scales overlap the codes
  };
  for (const auto& [bi, bo] : bad) {
    const std::string want = full_check(k, bi, bo);
    CAPTURE(want);
    REQUIRE(!want.empty());
    CHECK(refusal(k, bi, bo) == want);
  }
  CHECK(refusal(k, in, out).empty());
  Stream::null().synchronize();
}
