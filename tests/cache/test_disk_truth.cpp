// The cache says what is true (issue 36): header damage that SQLite survives read-only or as an
// "unsupported file format" is moved aside once, like any foreign file; verify() reports a file
// that was moved aside when it was opened; clear() says when nothing was deleted; MXJIT_CACHE
// values it does not know are a warning; every warning is one line.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cache_test_util.hpp"

using namespace mxjit;
using namespace mxjit::cache;
using namespace mxjit::cache::test;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  ::chmod(p.c_str(), 0600);
}

}  // namespace

TEST_CASE("truth: every one-bit damage of the SQLite header is survived with at most one warning, then the cache works") {
  // Once, bytes 18 (write version: read-only for good) and 47 (schema format: "unsupported file
  // format") left a cache degraded in every process, never moved aside.
  // On tmpfs where there is one: 400 damaged files, each written twice, without waiting for fsync.
  EnvVar tmp("TMPDIR", fs::is_directory("/dev/shm") ? std::optional<std::string>("/dev/shm") : std::nullopt);
  TempDir good;
  {
    DiskCache c(good.path());
    for (int i = 0; i < 3; ++i) c.put(test_entry(i, 1000));
  }
  const std::string bytes = read_file(good / "kernels.sqlite");
  REQUIRE(bytes.size() > 100);
  std::vector<std::string> stuck;
  for (size_t at = 0; at < 100; ++at)
    for (int bit : {0, 3, 7}) {
      TempDir t;
      std::string damaged = bytes;
      damaged[at] = char(damaged[at] ^ (1 << bit));
      write_file(t / "kernels.sqlite", damaged);
      {
        WarningCapture w;  // the first process: one warning at most, whatever it decides
        DiskCache c(t.path());
        c.put(test_entry(10, 1000));
        (void)c.get(test_key(10));
        if (w.count() > 1) stuck.push_back(fmt::format("byte {} bit {}: {} warnings", at, bit, w.count()));
      }
      WarningCapture w;  // every later process: no warning, a working cache
      DiskCache c(t.path());
      c.put(test_entry(11, 1000));
      if (!c.enabled() || !c.get(test_key(11)) || w.count() != 0)
        stuck.push_back(fmt::format("byte {} bit {}: {}", at, bit, w.count() ? w.lines()[0] : "memory only"));
    }
  for (const std::string& s : stuck) MESSAGE(s);
  CHECK(stuck.empty());
}

TEST_CASE("truth: verify() reports a file moved aside when it was opened; the tool exits 1") {
  TempDir tmp;
  {
    DiskCache c(tmp.path());
    c.put(test_entry(1, 1000));
  }
  std::string bytes = read_file(tmp / "kernels.sqlite");
  bytes[4096 + 8] = char(bytes[4096 + 8] ^ 0xff);  // a small file: quick_check at open finds it
  write_file(tmp / "kernels.sqlite", bytes);
  WarningCapture w;
  DiskCache c(tmp.path());
  REQUIRE(w.count() == 1);
  CHECK(w.lines()[0].find('\n') == std::string::npos);  // quick_check's two lines made one
  CHECK(w.lines()[0].find("fails quick_check (*** in database main *** ") != std::string::npos);
  const VerifyReport r = c.verify(false);
  CHECK(r.file_ok);  // the new file is sound ...
  CHECK(r.rebuilt_at_open.find("fails quick_check") != std::string::npos);  // ... the old one was not
  CHECK(r.rebuilt_at_open.find("moved it aside to ") != std::string::npos);
}

TEST_CASE("truth: clear() says when the rows could not be deleted") {
  TempDir tmp;
  DiskCache c(tmp.path());
  c.put(test_entry(1, 1000));
  DiskCacheTestPeer::exec(c, "PRAGMA query_only = 1");  // every write fails as on a read-only file
  WarningCapture w;
  CHECK_FALSE(c.clear());
  CHECK(row_count(c.file()) == 1);
  CHECK(w.count() == 1);
  CHECK(c.unusable_reason().find("failed while clearing") != std::string::npos);
  TempDir ok;
  DiskCache d(ok.path());
  d.put(test_entry(1, 1000));
  CHECK(d.clear());
  CHECK(row_count(d.file()) == 0);
}

TEST_CASE("truth: MXJIT_CACHE values mxjit does not know are a warning naming the accepted ones") {
  for (const char* off : {"0", "off", "OFF", "false", "no", " 0 ", "No\n"}) {
    EnvVar e("MXJIT_CACHE", std::string(off));
    WarningCapture w;
    CHECK(DiskCache::disabled_by_env());
    CHECK(w.count() == 0);
  }
  for (const char* on : {"1", "on", "true", "yes", ""}) {
    EnvVar e("MXJIT_CACHE", std::string(on));
    WarningCapture w;
    CHECK_FALSE(DiskCache::disabled_by_env());
    CHECK(w.count() == 0);
  }
  for (const char* odd : {"banana", "disabled", "0x0", "-1"}) {
    EnvVar e("MXJIT_CACHE", std::string(odd));
    WarningCapture w;
    CHECK_FALSE(DiskCache::disabled_by_env());
    REQUIRE(w.count() == 1);
    CHECK(w.lines()[0] == fmt::format("mxjit: warning: MXJIT_CACHE='{}' is not one of 0, off, false, no (cache off) or 1, "
                                      "on, true, yes (cache on); keeping the kernel cache on", odd));
  }
}

TEST_CASE("truth: a warning is one line, control characters escaped") {
  TempDir tmp;
  const fs::path dir = tmp / "a\nb\x1b[31m";
  fs::create_directory(dir);
  ::chmod(dir.c_str(), 0777);  // untrusted: one warning naming the path
  WarningCapture w;
  DiskCache c(dir);
  REQUIRE(w.count() == 1);
  CHECK(w.lines()[0].find('\n') == std::string::npos);
  CHECK(w.lines()[0].find('\x1b') == std::string::npos);
  CHECK(w.lines()[0].find("a\\x0ab\\x1b[31m") != std::string::npos);
}
