#pragma once
// Walking every index of a shape, for the layout tests.
#include <cstdint>
#include <vector>

namespace mxjit::test {

/// Calls `f(index)` for every index of `shape`, row-major (none when an extent is 0).
template <class F>
void for_each_index(const std::vector<int64_t>& shape, F&& f) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(idx);
    for (int a = int(shape.size()) - 1; a >= 0; --a) {
      if (++idx[size_t(a)] < shape[size_t(a)]) break;
      idx[size_t(a)] = 0;
    }
  }
}

}  // namespace mxjit::test
