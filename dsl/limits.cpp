#include "dsl/limits.hpp"

#include <bit>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"

namespace mxjit {

namespace {
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
}  // namespace

std::string limit_text(int64_t limit) {
  if (limit > 1 && std::has_single_bit(uint64_t(limit))) return fmt::format("2^{}", std::countr_zero(uint64_t(limit)));
  return fmt::format("{}", limit);
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  if (a != 0 && b > kInt64Max / a) return std::nullopt;
  return a * b;
}

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  if (a > kInt64Max - b) return std::nullopt;
  return a + b;
}

int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

std::optional<int64_t> checked_round_up(int64_t a, int64_t m) { return checked_mul(ceil_div(a, m), m); }

std::optional<int64_t> element_count(std::span<const int64_t> shape) {
  for (int64_t e : shape)
    if (e == 0) return 0;
  int64_t n = 1;
  for (int64_t e : shape) {
    const std::optional<int64_t> p = checked_mul(n, e);
    if (!p || *p > kMaxElements) return std::nullopt;
    n = *p;
  }
  return n;
}

int64_t checked_element_count(std::string_view what, std::span<const int64_t> shape) {
  const std::optional<int64_t> n = element_count(shape);
  if (!n)
    throw UsageError(fmt::format("{}: extents [{}] hold more than {} elements, the limit of one tensor", what,
                                 fmt::join(shape, ","), limit_text(kMaxElements)));
  return *n;
}

}  // namespace mxjit
