// Fault injection: every damaged, foreign or untrusted file or directory is survived with exactly
// one warning, and the cache keeps working (rebuilt) or degrades to memory-only.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "cache_test_util.hpp"

using namespace mxjit;
using namespace mxjit::cache;
using namespace mxjit::cache::test;

namespace {

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Fills a cache in `dir` with `n` entries and closes it.
void make_valid_cache(const fs::path& dir, int n) {
  DiskCache c(dir);
  REQUIRE(c.enabled());
  for (int i = 0; i < n; ++i) c.put(test_entry(i));
}

/// Opens `dir` after a fault was planted: expects one warning, the bad file moved aside, and a
/// working, empty cache.
void expect_rebuilt(const fs::path& dir) {
  WarningCapture w;
  DiskCache c(dir);
  CHECK(c.enabled());
  REQUIRE(w.count() == 1);
  CHECK(w.lines()[0].find("mxjit: warning: kernel cache ") == 0);
  CHECK(w.lines()[0].find("moved it aside to") != std::string::npos);
  CHECK(files_containing(dir, "kernels.sqlite.bad-").size() == 1);
  CHECK_FALSE(c.get(test_key(0)).has_value());
  c.put(test_entry(0));
  CHECK(c.get(test_key(0))->blob == test_entry(0).blob);
  CHECK(w.count() == 1);
}

/// Opens `dir` expecting memory-only mode with exactly one warning naming `why`.
void expect_memory_only(const fs::path& dir, std::string_view why) {
  WarningCapture w;
  DiskCache c(dir);
  CHECK_FALSE(c.enabled());
  c.put(test_entry(1));
  CHECK_FALSE(c.get(test_key(1)).has_value());
  CHECK(c.list().empty());
  REQUIRE(w.count() == 1);
  CHECK(w.lines()[0].find(why) != std::string::npos);
  CHECK(w.lines()[0].find("; using memory only") != std::string::npos);
}

}  // namespace

TEST_CASE("fault: a file of random bytes is moved aside") {
  TempDir tmp;
  write_file(tmp / "kernels.sqlite", random_bytes(16384, 1));
  ::chmod((tmp / "kernels.sqlite").c_str(), 0600);
  expect_rebuilt(tmp.path());
}

TEST_CASE("fault: a truncated file is moved aside") {
  TempDir tmp;
  make_valid_cache(tmp.path(), 20);
  const fs::path file = tmp / "kernels.sqlite";
  fs::resize_file(file, fs::file_size(file) / 2);
  expect_rebuilt(tmp.path());
}

TEST_CASE("fault: a zero-length file is a fresh database, no warning") {
  TempDir tmp;
  write_file(tmp / "kernels.sqlite", "");
  ::chmod((tmp / "kernels.sqlite").c_str(), 0600);
  WarningCapture w;
  DiskCache c(tmp.path());
  CHECK(c.enabled());
  c.put(test_entry(1));
  CHECK(c.get(test_key(1)).has_value());
  CHECK(w.count() == 0);
}

TEST_CASE("fault: a foreign SQLite file is moved aside") {
  SUBCASE("another application's id") {
    TempDir tmp;
    raw_sql(tmp / "kernels.sqlite",
            "PRAGMA application_id = 1234; CREATE TABLE users(id INTEGER, name TEXT);"
            " INSERT INTO users VALUES(1, 'x');");
    ::chmod((tmp / "kernels.sqlite").c_str(), 0600);
    expect_rebuilt(tmp.path());
    // The foreign data is intact in the moved file.
    CHECK(raw_sql(files_containing(tmp.path(), ".bad-")[0], "SELECT name FROM users") == "x");
  }
  SUBCASE("no application id, but tables") {
    TempDir tmp;
    raw_sql(tmp / "kernels.sqlite", "CREATE TABLE kernels(key TEXT);");
    ::chmod((tmp / "kernels.sqlite").c_str(), 0600);
    expect_rebuilt(tmp.path());
  }
}

TEST_CASE("fault: a newer schema version is moved aside") {
  TempDir tmp;
  make_valid_cache(tmp.path(), 1);
  raw_sql(tmp / "kernels.sqlite", "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  expect_rebuilt(tmp.path());
}

TEST_CASE("fault: a stale journal of a moved file is moved with it") {
  TempDir tmp;
  write_file(tmp / "kernels.sqlite", random_bytes(8192, 2));
  write_file(tmp / "kernels.sqlite-journal", random_bytes(4096, 3));
  expect_rebuilt(tmp.path());
  CHECK_FALSE(fs::exists(tmp / "kernels.sqlite-journal"));
}

TEST_CASE("fault: a directory that cannot be created or written means memory only") {
  TempDir tmp;
  if (::geteuid() == 0) {
    // Root bypasses permission bits: make creation fail with a regular file in the path.
    write_file(tmp / "plain-file", "x");
    expect_memory_only(tmp / "plain-file" / "sub", "cannot be created");
  } else {
    fs::create_directory(tmp / "ro");
    ::chmod((tmp / "ro").c_str(), 0500);
    expect_memory_only(tmp / "ro", "is not writable");
    expect_memory_only(tmp / "ro" / "sub", "cannot be created");
  }
}

TEST_CASE("fault: a directory or file writable by others is not trusted") {
  TempDir tmp;
  fs::create_directory(tmp / "open");
  ::chmod((tmp / "open").c_str(), 0777);
  expect_memory_only(tmp / "open", "is writable by other users (mode 0777)");

  TempDir tmp2;
  make_valid_cache(tmp2.path(), 1);
  ::chmod((tmp2 / "kernels.sqlite").c_str(), 0666);
  expect_memory_only(tmp2.path(), "is writable by other users (mode 0666)");
}

TEST_CASE("fault: a file or directory owned by another user is not trusted") {
  if (::geteuid() != 0) return;  // only root can hand files to another uid
  TempDir tmp;
  make_valid_cache(tmp.path(), 1);
  REQUIRE(::chown((tmp / "kernels.sqlite").c_str(), 65534, 65534) == 0);
  expect_memory_only(tmp.path(), "is owned by uid 65534");

  TempDir tmp2;
  fs::create_directory(tmp2 / "theirs");
  REQUIRE(::chown((tmp2 / "theirs").c_str(), 65534, 65534) == 0);
  expect_memory_only(tmp2 / "theirs", "is owned by uid 65534");
}

TEST_CASE("fault: a corrupted blob is caught by its checksum and its row removed") {
  TempDir tmp;
  DiskCache c(tmp.path());
  c.put(test_entry(1));
  c.put(test_entry(2));
  raw_sql(c.file(), "UPDATE kernels SET blob = randomblob(20480) WHERE key = '" +
                        test_key(1).hex() + "'");
  WarningCapture w;
  CHECK_FALSE(c.get(test_key(1)).has_value());
  CHECK(w.count() == 1);
  CHECK(w.lines()[0].find("failed its checksum") != std::string::npos);
  CHECK(row_count(c.file()) == 1);
  CHECK(c.stats().evicted_bad == 1);
  CHECK(c.get(test_key(2)).has_value());

  // verify() finds the same kind of damage without a get().
  raw_sql(c.file(), "UPDATE kernels SET meta = 'tampered'");
  VerifyReport r = c.verify(true);
  CHECK(r.bad == 1);
  REQUIRE(r.bad_keys.size() == 1);
  CHECK(r.bad_keys[0] == test_key(2).hex());
  CHECK(row_count(c.file()) == 0);
  CHECK(w.count() == 1);
}

TEST_CASE("fault: a full disk on write degrades to memory only, once") {
  TempDir tmp;
  DiskCache c(tmp.path());
  c.put(test_entry(1, 1000));
  // Cap the file at its current size: the next large insert fails with SQLITE_FULL.
  DiskCacheTestPeer::exec(c, "PRAGMA max_page_count = " +
                                 raw_sql(c.file(), "PRAGMA page_count"));
  WarningCapture w;
  c.put(test_entry(2, 64 * 1024));
  CHECK_FALSE(c.enabled());
  c.put(test_entry(3));
  CHECK_FALSE(c.get(test_key(1)).has_value());
  REQUIRE(w.count() == 1);
  CHECK(w.lines()[0].find("full") != std::string::npos);
  CHECK(w.lines()[0].find("; using memory only") != std::string::npos);
  CHECK(row_count(c.file()) == 1);  // the failed transaction left nothing behind
}

TEST_CASE("fault: a file locked by another process is skipped, bounded, with one warning") {
  TempDir tmp;
  DiskCache c(tmp.path());
  c.put(test_entry(1, 100));
  DiskCacheTestPeer::set_timeouts(c, std::chrono::milliseconds(20), std::chrono::milliseconds(150));
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open((tmp / "kernels.sqlite").c_str(), &other) == SQLITE_OK);
  REQUIRE(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
  WarningCapture w;
  c.put(test_entry(2, 100));
  c.put(test_entry(3, 100));
  if (!c.wal()) CHECK_FALSE(c.get(test_key(1)).has_value());  // readers blocked too
  CHECK(w.count() == 1);
  CHECK(w.lines()[0].find("stayed locked") != std::string::npos);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  CHECK(c.enabled());
  c.put(test_entry(2, 100));
  CHECK(c.get(test_key(2)).has_value());
  CHECK(row_count(c.file()) == 2);
}

TEST_CASE("fault: corruption found after opening is moved aside on use") {
  TempDir tmp;
  make_valid_cache(tmp.path(), 30);  // large enough to skip quick_check at open
  const fs::path file = tmp / "kernels.sqlite";
  {
    // Overwrite every page after the first few with garbage, leaving the header sound.
    const auto size = static_cast<int64_t>(fs::file_size(file));
    const std::string junk = random_bytes(static_cast<size_t>(size - 4 * 4096), 9);
    const int fd = ::open(file.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, junk.data(), junk.size(), 4 * 4096) == static_cast<ssize_t>(junk.size()));
    ::close(fd);
  }
  WarningCapture w;
  DiskCache c(tmp.path());
  for (int i = 0; i < 30; ++i) CHECK_FALSE(c.get(test_key(i)).has_value());
  CHECK(c.enabled());
  REQUIRE(w.count() >= 1);
  CHECK(w.lines()[0].find("moved it aside") != std::string::npos);
  c.put(test_entry(0));
  CHECK(c.get(test_key(0)).has_value());
}
