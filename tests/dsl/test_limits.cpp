// The size limits of dsl/limits.hpp and the checked arithmetic behind them: extents, blocks,
// storage sizes and pipeline sizes past a limit are a UsageError naming it, never an overflow.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/limits.hpp"
#include "dsl/text.hpp"

using namespace mxjit;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p62 = int64_t(1) << 62;

/// The UsageError message of `f`, or "" when it throws none.
template <class F>
std::string usage_message_or_empty(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

/// The UsageError message of `f`, which must throw one.
template <class F>
std::string usage_message(F&& f) {
  const std::string m = usage_message_or_empty(f);
  if (m.empty()) FAIL_CHECK("expected UsageError, nothing was thrown");
  return m;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Pipeline mxfp8(int r, int axis, int64_t block, Layout scales = Layout::linear()) {
  auto x = input("x", DType::bf16, rank(r));
  auto s = e8m0_scale(amax(blocks(x, axis, block)), e4m3, ScaleRule::floor);
  return pipeline({output("q", cast(e4m3, x / s)), output("s", s, scales)});
}

}  // namespace

TEST_CASE("limits: checked arithmetic never overflows") {
  CHECK(checked_mul(int64_t(1) << 31, int64_t(1) << 31) == int64_t(1) << 62);
  CHECK_FALSE(checked_mul(k2p62, 2).has_value());
  CHECK(checked_mul(0, kMax) == 0);
  CHECK_FALSE(checked_add(kMax, 1).has_value());
  CHECK(checked_add(kMax - 1, 1) == kMax);
  CHECK(ceil_div(kMax, 32) == kMax / 32 + 1);  // (a + b - 1) / b would overflow
  CHECK(ceil_div(64, 32) == 2);
  CHECK(ceil_div(0, 32) == 0);
  CHECK_FALSE(checked_round_up(kMax, 128).has_value());
  CHECK(checked_round_up(130, 128) == 256);
  CHECK(limit_text(kMaxElements) == "2^40");
  CHECK(limit_text(4096) == "2^12");
  CHECK(limit_text(100) == "100");
}

TEST_CASE("limits: an empty shape holds 0 elements whatever its other extents") {
  const std::vector<std::vector<int64_t>> empty = {{0, k2p62, k2p62}, {k2p62, k2p62, 0}, {0, kMax}, {kMax, 0, kMax}};
  for (const auto& s : empty) CHECK(element_count(s) == 0);
  CHECK(element_count(std::vector<int64_t>{int64_t(1) << 20, int64_t(1) << 20}) == kMaxElements);
  CHECK_FALSE(element_count(std::vector<int64_t>{int64_t(1) << 20, int64_t(1) << 21}).has_value());
  CHECK_FALSE(element_count(std::vector<int64_t>{k2p62, k2p62, 1}).has_value());
  const std::string m = usage_message([] { checked_element_count("input 'x'", std::vector<int64_t>{k2p62, 4}); });
  CHECK(has(m, "input 'x': extents [4611686018427387904,4] hold more than 2^40 elements"));
}

TEST_CASE("limits: a block size past 2^40 is refused when the blocks are declared") {
  auto x = input("x", DType::f32, rank(2));
  CHECK_NOTHROW(blocks(x, 1, kMaxBlockSize));
  std::string m = usage_message([&] { blocks(x, 1, kMaxBlockSize * 2); });
  CHECK(has(m, "blocks(x, axis=1, size=2199023255552): block size 2199023255552 exceeds the limit 2^40"));
  m = usage_message([&] { blocks(x, {0, 1}, {32, k2p62}); });
  CHECK(has(m, "exceeds the limit 2^40"));
  m = usage_message([&] { dequantize("c", "s", e4m3, ScaleFormat::e8m0, rank(2), 1, k2p62); });
  CHECK(has(m, "dequantize('c'): block size 4611686018427387904 exceeds the limit 2^40"));
  // The text form reports it at the block option.
  m = usage_message([] { parse_pipeline("f32[2] -> mxfp8.e4m3 blocks(1,4611686018427387904)"); });
  CHECK(has(m, "spec:1:22: blocks(x, axis=1, size=4611686018427387904): block size 4611686018427387904 exceeds"));
}

TEST_CASE("limits: a pipeline has at most 16 outputs; a spec at most 8 casts") {
  auto x = input("x", DType::bf16, rank(2));
  std::vector<Output> outs;
  for (int i = 0; i < 17; ++i) outs.push_back(output("v" + std::to_string(i), x * double(i + 1), DType::f32));
  std::string m = usage_message([&] { pipeline(outs); });
  CHECK(has(m, "pipeline: 17 outputs; a pipeline has at most 16"));
  outs.pop_back();
  CHECK_NOTHROW(pipeline(outs));

  std::string spec = "bf16[2] -> mxfp8.e4m3";
  for (int i = 1; i < 8; ++i) spec += " ; mxfp8.e4m3";
  CHECK_NOTHROW(parse_pipeline(spec));
  const size_t ninth = spec.size() + 3;
  m = usage_message([&] { parse_pipeline(spec + " ; mxfp8.e4m3"); });
  CHECK(has(m, "spec:1:" + std::to_string(ninth + 1) + ": a spec has at most 8 casts"));
  m = usage_message([&] { parse_pipeline(spec + " amax"); });  // 17 outputs
  CHECK(has(m, "pipeline: 17 outputs"));
  // A 33 KB spec of 3000 casts is refused at once, before any pipeline is built.
  std::string big = "bf16[2] -> mxfp8.e4m3";
  for (int i = 1; i < 3000; ++i) big += " ; mxfp8.e4m3";
  m = usage_message([&] { parse_pipeline(big); });
  CHECK(has(m, "a spec has at most 8 casts"));
}

TEST_CASE("limits: expressions are bounded in depth and in nodes counted as a tree") {
  auto x = input("x", DType::f32, rank(2));
  // Squaring doubles the tree at every step: 2^13 nodes would make the canonical text, the hash
  // and the generated code exponential in the steps.
  Expr y = x;
  std::string m;
  for (int i = 0; i < 13 && m.empty(); ++i) m = usage_message_or_empty([&] { y = y * y; });
  CHECK(has(m, "mul: the expression is"));
  CHECK(has(m, "an expression has at most depth 256 and 4096 nodes"));
  Expr z = x;
  m.clear();
  for (int i = 0; i < 300 && m.empty(); ++i) m = usage_message_or_empty([&] { z = z + 1.0; });
  CHECK(has(m, "add: the expression is 257 deep"));
  // Within the limits a pipeline builds.
  Expr w = x;
  for (int i = 0; i < 100; ++i) w = w + 1.0;
  CHECK_NOTHROW(pipeline({output("w", w, DType::f32)}));
}

TEST_CASE("limits: layout storage and strides are checked and zero-aware") {
  const BoundLayout rm = Layout::row_major().bind(3), rm2 = Layout::row_major().bind(2);
  const BoundLayout b = Layout::blocked_128x4().bind(2, 0, 1);
  const std::vector<int64_t> empty = {0, k2p62, k2p62}, empty_last = {k2p62, k2p62, 0};
  CHECK(rm.size(empty) == 0);
  CHECK(rm.size(empty_last) == 0);
  CHECK(b.size(std::vector<int64_t>{0, kMax}) == 0);
  std::string m = usage_message([&] { b.size(std::vector<int64_t>{kMax, kMax}); });
  CHECK(has(m, "layout blocked128x4: the storage of extents [9223372036854775807,9223372036854775807] holds more "
               "than 2^40 elements"));
  m = usage_message([&] { rm2.size(std::vector<int64_t>{int64_t(1) << 21, int64_t(1) << 20}); });
  CHECK(has(m, "holds more than 2^40 elements"));
  // Strides that would pass INT64_MAX (an empty tensor only) are 0, never a wrapped value.
  CHECK(rm.strides(empty) == std::vector<int64_t>{0, k2p62, 1});
  CHECK(rm.strides(empty_last) == std::vector<int64_t>{0, 0, 1});
  CHECK(rm.strides(std::vector<int64_t>{3, 4, 5}) == std::vector<int64_t>{20, 5, 1});
  // A padded axis near INT64_MAX of an empty tensor stays unpadded rather than wrapping.
  CHECK(b.padded(std::vector<int64_t>{0, kMax}) == std::vector<int64_t>{0, kMax});
}

TEST_CASE("limits: output geometry of huge and empty domains") {
  const Pipeline p = mxfp8(3, 2, 32, Layout::blocked_128x4());
  const std::vector<int64_t> empty = {0, k2p62, k2p62};
  for (int o = 0; o < 2; ++o) {
    CHECK(output_geometry(p, o, empty).storage_bytes == 0);
    CHECK_FALSE(output_geometry(p, o, empty).padded);  // no product of the huge extents (UBSan)
  }
  const std::string m = usage_message([&] { output_geometry(p, 0, std::vector<int64_t>{1 << 21, 1 << 21, 1}); });
  CHECK(has(m, "output 'q': extents [2097152,2097152,1] hold more than 2^40 elements"));
  // Blocked scales past the limit name the output too.
  const std::string m2 = usage_message([&] { output_geometry(p, 1, std::vector<int64_t>{k2p62, 4, 32}); });
  CHECK(has(m2, "output 's': layout blocked128x4: the storage of extents"));
  // A block longer than its axis is one block of the whole axis.
  const Pipeline big = mxfp8(2, 1, kMaxBlockSize);
  CHECK(output_geometry(big, 1, std::vector<int64_t>{64, 64}).view_shape == std::vector<int64_t>{64, 1});
  CHECK(output_geometry(big, 1, std::vector<int64_t>{64, kMax}).view_shape == std::vector<int64_t>{64, 8388608});
}
