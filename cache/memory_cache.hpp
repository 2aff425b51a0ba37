#pragma once
/// \file Tier 1 of the kernel cache: a thread-safe in-process map from a semantic key to an
/// immutable value (typically a loaded kernel). Lookups take a shared lock only.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

namespace mxjit::cache {

/// Thread-safe map Key -> shared immutable Value. Values are never replaced: the first insert
/// of a key wins, so every thread ends up using the same object for one key.
template <class Key, class Value, class KeyHash = std::hash<Key>>
class MemoryCache {
 public:
  /// The value stored for `key`, or null. Counts a hit or a miss.
  std::shared_ptr<const Value> find(const Key& key) const {
    std::shared_lock lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) {
      misses_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    hits_.fetch_add(1, std::memory_order_relaxed);
    return it->second;
  }

  /// Stores `value` under `key` unless the key is already present; returns the stored value
  /// (the winner), which is the existing one when another thread inserted first.
  std::shared_ptr<const Value> insert(Key key, Value value) {
    // Build the object outside the lock: Value may be expensive to move or destroy.
    auto fresh = std::make_shared<const Value>(std::move(value));
    std::unique_lock lock(mu_);
    auto [it, inserted] = map_.try_emplace(std::move(key), std::move(fresh));
    return it->second;
  }

  /// Number of keys stored.
  size_t size() const {
    std::shared_lock lock(mu_);
    return map_.size();
  }

  /// Drops every entry; values still held by callers stay alive until released.
  void clear() {
    std::unique_lock lock(mu_);
    map_.clear();
  }

  /// Number of find() calls that found a value.
  int64_t hits() const noexcept { return hits_.load(std::memory_order_relaxed); }
  /// Number of find() calls that found nothing.
  int64_t misses() const noexcept { return misses_.load(std::memory_order_relaxed); }

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const Value>, KeyHash> map_;
  mutable std::atomic<int64_t> hits_{0};
  mutable std::atomic<int64_t> misses_{0};
};

}  // namespace mxjit::cache
