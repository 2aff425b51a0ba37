#include "cache/key.hpp"

#include <cstdint>

namespace mxjit::cache {

Hash128 content_key(const KeyParts& parts) {
  // The leading tag keeps cache keys disjoint from any other use of Hasher.
  return Hasher()
      .add(std::string_view("mxjit.cache.content_key"))
      .add(static_cast<int64_t>(parts.key_schema))
      .add(parts.generator_version)
      .add(parts.source)
      .add(parts.headers)
      .add(parts.options)
      .add(parts.arch)
      .add(parts.toolchain_version)
      .digest();
}

std::optional<Hash128> parse_hash128(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  uint64_t words[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    uint64_t digit;
    if (c >= '0' && c <= '9') digit = static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') digit = static_cast<uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') digit = static_cast<uint64_t>(c - 'A' + 10);
    else return std::nullopt;
    words[i / 16] = (words[i / 16] << 4) | digit;
  }
  return Hash128{words[0], words[1]};
}

}  // namespace mxjit::cache
