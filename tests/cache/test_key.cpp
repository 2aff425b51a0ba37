// Content keys: stable, sensitive to every component; WAL version gate.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "cache/key.hpp"
#include "cache/sqlite.hpp"

using namespace mxjit;
using namespace mxjit::cache;

namespace {
KeyParts base_parts() {
  KeyParts p;
  p.generator_version = "0.1.0";
  p.source = "__global__ void k() {}";
  p.options = "--std=c++17 -arch=sm_90a";
  p.arch = "sm_90a";
  p.toolchain_version = "12.8";
  return p;
}
}  // namespace

TEST_CASE("content_key is deterministic") {
  CHECK(content_key(base_parts()) == content_key(base_parts()));
  CHECK(content_key(base_parts()).hex().size() == 32);
}

TEST_CASE("a key differing in any one component is a different key") {
  const KeyParts base = base_parts();
  std::vector<KeyParts> variants(7, base);
  variants[0].key_schema = kKeySchema + 1;
  variants[1].generator_version = "0.1.1";
  variants[2].source += " ";
  variants[3].options = "--std=c++17 -arch=sm_90";
  variants[4].arch = "sm_90";
  variants[5].toolchain_version = "12.9";
  variants[6].headers = "prelude.cuh";
  std::set<Hash128> keys{content_key(base)};
  for (const KeyParts& v : variants) keys.insert(content_key(v));
  CHECK(keys.size() == 8);

  // Moving a character across a field boundary must change the key too.
  KeyParts a = base, b = base;
  a.source = "ab";
  a.options = "c";
  b.source = "a";
  b.options = "bc";
  CHECK(content_key(a) != content_key(b));
}

TEST_CASE("parse_hash128 inverts hex()") {
  const Hash128 h = content_key(base_parts());
  CHECK(parse_hash128(h.hex()) == h);
  CHECK(parse_hash128("00000000000000010000000000000002") == Hash128{1, 2});
  CHECK_FALSE(parse_hash128("xyz").has_value());
  CHECK_FALSE(parse_hash128(std::string(32, 'g')).has_value());
  CHECK(Hash128Hash{}(h) == Hash128Hash{}(h));
}

TEST_CASE("WAL only on SQLite with the WAL-reset fix") {
  using detail::wal_is_safe;
  CHECK_FALSE(wal_is_safe(3040001));   // Debian 12
  CHECK_FALSE(wal_is_safe(3044005));
  CHECK(wal_is_safe(3044006));
  CHECK(wal_is_safe(3044099));
  CHECK_FALSE(wal_is_safe(3045000));
  CHECK_FALSE(wal_is_safe(3050006));
  CHECK(wal_is_safe(3050007));
  CHECK_FALSE(wal_is_safe(3051000));
  CHECK_FALSE(wal_is_safe(3051002));
  CHECK(wal_is_safe(3051003));
  CHECK(wal_is_safe(3052000));
}
