#pragma once
/// \file 128-bit stable hashing (XXH3-128, stable across xxHash >= 0.8 and across machines).
#include <cstdint>
#include <string>
#include <string_view>

namespace mxjit {

/// A 128-bit digest; printed as 32 lowercase hex digits.
struct Hash128 {
  uint64_t hi = 0, lo = 0;
  /// 32 lowercase hex digits, high word first.
  std::string hex() const;
  friend bool operator==(const Hash128&, const Hash128&) = default;
  friend auto operator<=>(const Hash128&, const Hash128&) = default;
};

/// Hashes bytes; the same bytes give the same digest on every machine and build.
Hash128 hash128(std::string_view bytes);

/// Incremental builder: feeds tagged fields so that ("ab","c") and ("a","bc") differ.
class Hasher {
 public:
  /// Adds one field (its length is hashed too).
  Hasher& add(std::string_view field);
  /// Adds an integer field.
  Hasher& add(int64_t v);
  /// The digest of everything added so far.
  Hash128 digest() const { return hash128(buf_); }

 private:
  std::string buf_;
};

}  // namespace mxjit
