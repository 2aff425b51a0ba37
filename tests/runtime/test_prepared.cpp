// Prepared launches without a GPU: the parameter words a launch passes at other addresses equal those
// prepared at those addresses, and every bad pointer is refused with the full check's message.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "runtime/bindings.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"

using namespace mxjit;

namespace {

// The kernels are compiled for this host's GPU where there is one (a prepared launch loads them).
Target target() { return gpu_available() ? current_target() : Target::parse("sm_90a"); }

// dim1 MXFP8 of a (64, 96) bf16: col-major codes, (2, 96) scales.
struct Dim1 {
  Kernel k;
  Dim1() {
    auto x = input("x", DType::bf16, rank(2));
    auto s = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
    k = jit(pipeline({output("q", cast(e4m3, x / s), layout::col_major()), output("s", s)}), target());
  }
  // Views at x, q, s (device addresses; nothing is dereferenced).
  static std::vector<TensorView> views(uint64_t x, uint64_t q, uint64_t s, std::vector<int64_t> shape = {64, 96}) {
    auto at = [](uint64_t a) { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); };
    const int64_t m = shape[0], n = shape[1];
    return {TensorView::contiguous(at(x), DType::bf16, shape, DeviceKind::cuda),
            TensorView::strided(at(q), DType::u8, shape, {1, m}, DeviceKind::cuda),
            TensorView::contiguous(at(s), DType::u8, {(m + 31) / 32, n}, DeviceKind::cuda)};
  }
  PreparedLaunch prepare(const std::vector<TensorView>& v) const {
    return k.prepare(std::span<const TensorView>(v).first(1), std::span<const TensorView>(v).subspan(1));
  }
  // The message of the full check on these views ("" when they pass).
  std::string full_check(const std::vector<TensorView>& v) const {
    try {
      detail::check_bindings(k.pipeline(), std::span<const TensorView>(v).first(1),
                             std::span<const TensorView>(v).subspan(1), DeviceKind::cuda);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
};

std::vector<int64_t> words(const PreparedLaunch& pl, std::vector<uint64_t> ptrs, uint64_t workspace = 0) {
  std::vector<int64_t> w(pl.words());
  pl.fill_words(ptrs, workspace, w);
  return w;
}

std::string refusal(const PreparedLaunch& pl, std::vector<uint64_t> ptrs, uint64_t workspace = 0) {
  try {
    words(pl, std::move(ptrs), workspace);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

constexpr uint64_t kX = 0x10000, kQ = 0x20000, kS = 0x30000;

}  // namespace

TEST_CASE("a prepared launch patches the pointers into the words prepared at other addresses") {
  Dim1 f;
  const PreparedLaunch pl = f.prepare(Dim1::views(kX, kQ, kS));
  CHECK(pl.pointers() == 3);
  REQUIRE(pl.words() > 6);
  const std::vector<uint64_t> moved = {kX + 0x100000, kQ + 0x700010, kS + 0x900003};
  const std::vector<int64_t> w = words(pl, moved);
  CHECK(w == words(f.prepare(Dim1::views(moved[0], moved[1], moved[2])), moved));
  for (uint64_t p : moved) CHECK(std::count(w.begin(), w.end(), int64_t(p)) == 1);
  const int64_t domain[] = {64, 96};
  CHECK(std::search(w.begin(), w.end(), std::begin(domain), std::end(domain)) != w.end());
  // Another geometry prepares other words.
  const std::vector<uint64_t> same = {kX, kQ, kS};
  CHECK(words(f.prepare(Dim1::views(kX, kQ, kS, {64, 128})), same) != words(pl, same));
}

TEST_CASE("a prepared launch refuses a bad pointer with the full check's message") {
  Dim1 f;
  const PreparedLaunch pl = f.prepare(Dim1::views(kX, kQ, kS));
  const std::vector<std::vector<uint64_t>> bad = {
      {0, kQ, kS},                  // null input
      {kX, 0, kS},                  // null output
      {kX + 1, kQ, kS},             // not aligned to the bf16 element
      {kX, kX + 64, kS},            // codes overlap the input
      {kX, kQ, kQ + 100},           // scales overlap the codes
      {kX, kQ, kX + 64 * 96 * 2 - 1},  // scales overlap the input's last byte
  };
  for (const auto& p : bad) {
    const std::string want = f.full_check(Dim1::views(p[0], p[1], p[2]));
    CAPTURE(want);
    REQUIRE(!want.empty());
    CHECK(refusal(pl, p) == want);
  }
  // Adjacent tensors do not overlap.
  CHECK(refusal(pl, {kX, kX + 64 * 96 * 2, kX + 64 * 96 * 3}).empty());
  CHECK(refusal(pl, {kX, kQ}).find("2 pointers given but this launch takes 3 (1 inputs, 2 outputs)") != std::string::npos);
  CHECK(refusal(pl, {kX, kQ, kS}, 0x1000).find("workspace 0x1000 given, but this cast needs none") != std::string::npos);
}

TEST_CASE("the inputs' 16-byte alignment class is part of what is prepared") {
  Dim1 f;
  const PreparedLaunch aligned = f.prepare(Dim1::views(kX, kQ, kS));
  CHECK(aligned.fits(std::vector<uint64_t>{kX + 16, kQ + 1, kS + 3}));  // outputs' alignment does not matter
  CHECK_FALSE(aligned.fits(std::vector<uint64_t>{kX + 2, kQ, kS}));
  CHECK(refusal(aligned, {kX + 2, kQ, kS}).find("input 'x': base address 0x10002 is not 16-byte aligned, unlike the one "
                                                "this launch was prepared for") != std::string::npos);
  const PreparedLaunch unaligned = f.prepare(Dim1::views(kX + 2, kQ, kS));
  CHECK(unaligned.fits(std::vector<uint64_t>{kX + 6, kQ, kS}));
  CHECK_FALSE(unaligned.fits(std::vector<uint64_t>{kX, kQ, kS}));
  CHECK(refusal(unaligned, {kX + 6, kQ, kS}).empty());
}

TEST_CASE("NVFP4: the workspace word and its pre-pass are prepared; empty domains prepare no words") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = nvfp4_scale(amax(blocks(x, 1, 16)), Nvfp4Convention::te);
  Kernel k = jit(pipeline({output("q", cast(e2m1, x / s)), output("s", s)}), target());
  auto at = [](uint64_t a) { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); };
  std::vector<TensorView> in = {TensorView::contiguous(at(kX), DType::bf16, {32, 64}, DeviceKind::cuda)};
  std::vector<TensorView> out = {TensorView::contiguous(at(kQ), DType::u8, {32, 32}, DeviceKind::cuda),
                                 TensorView::contiguous(at(kS), DType::u8, {32, 4}, DeviceKind::cuda)};
  const PreparedLaunch pl = k.prepare(in, out);
  CHECK(refusal(pl, {kX, kQ, kS}, 0).find("workspace 0x0: this cast needs 4 bytes") != std::string::npos);
  CHECK(refusal(pl, {kX, kQ, kS}, 0x4008).find("workspace 0x4008") != std::string::npos);
  const std::vector<int64_t> w = words(pl, {kX, kQ, kS}, 0x4000);
  CHECK(std::count(w.begin(), w.end(), int64_t(0x4000)) == 1);
  in[0].shape = {0, 64};
  out[0].shape = {0, 32};
  out[1].shape = {0, 4};
  CHECK(k.prepare(in, out).words() == 0);
}
