#include "dsl/hash.hpp"

#include <fmt/format.h>
#include <xxhash.h>

namespace mxjit {

std::string Hash128::hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

Hash128 hash128(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return Hash128{h.high64, h.low64};
}

Hasher& Hasher::add(std::string_view field) {
  buf_ += fmt::format("{}:", field.size());
  buf_ += field;
  return *this;
}

Hasher& Hasher::add(int64_t v) { return add(fmt::format("{}", v)); }

}  // namespace mxjit
