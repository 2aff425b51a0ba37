#pragma once
/// \file A thread-safe map from a launch geometry, flattened into int64 words by the caller (counts,
/// dtypes, extents, strides, the inputs' 16-byte alignment bits, ...), to what was prepared for it.
/// Lookups allocate nothing: the caller reuses its key vector.
#include <xxhash.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace mxjit::detail {

template <class V>
class PreparedCache {
 public:
  /// Geometries kept before the cache starts over (a job with ever-new shapes must not grow it).
  static constexpr size_t kLimit = 4096;

  /// The value prepared for `key`, if any.
  std::optional<V> find(const std::vector<int64_t>& key) const {
    std::shared_lock lock(mutex_);
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  /// Keeps `value` for `key` (a racing twin's value wins; both are equivalent) and returns the kept one.
  V insert(const std::vector<int64_t>& key, V value) {
    std::unique_lock lock(mutex_);
    if (map_.size() >= kLimit) map_.clear();
    return map_.try_emplace(key, std::move(value)).first->second;
  }

 private:
  struct Hash {
    size_t operator()(const std::vector<int64_t>& k) const noexcept {
      return size_t(XXH3_64bits(k.data(), k.size() * sizeof(int64_t)));
    }
  };
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::vector<int64_t>, V, Hash> map_;
};

}  // namespace mxjit::detail
