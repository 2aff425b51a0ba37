#pragma once
/// \file The content key of a compiled kernel in the disk cache: a hash of everything that
/// determines the cubin bytes (docs/design.md §7, tier 2).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "dsl/hash.hpp"

namespace mxjit::cache {

/// Version of the key recipe itself; bump it when the set or meaning of KeyParts changes.
constexpr int kKeySchema = 2;

/// Everything that determines the bytes NVRTC produces for one kernel.
struct KeyParts {
  /// The key recipe version; normally kKeySchema.
  int key_schema = kKeySchema;
  /// Version of mxjit's code generator (templates and plan rules).
  std::string generator_version;
  /// The complete generated CUDA C++ source.
  std::string source;
  /// The headers it includes by name: each name and text (what the preprocessor reads).
  std::string headers;
  /// NVRTC options, in the order passed.
  std::string options;
  /// Exact architecture string, e.g. "sm_90a".
  std::string arch;
  /// NVRTC version, e.g. "12.8".
  std::string toolchain_version;
};

/// The content key of a kernel: XXH3-128 over every KeyParts field, each length-tagged, so a
/// change in any one field gives a different key.
Hash128 content_key(const KeyParts& parts);

/// Parses 32 hex digits (as Hash128::hex() prints them); nullopt for anything else.
std::optional<Hash128> parse_hash128(std::string_view hex);

/// std::hash-style functor for Hash128 keys in unordered containers (e.g. MemoryCache).
struct Hash128Hash {
  /// The digest is already uniform: folding its halves is enough.
  size_t operator()(const Hash128& h) const noexcept {
    return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ULL));
  }
};

}  // namespace mxjit::cache
