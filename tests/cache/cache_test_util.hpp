#pragma once
/// \file Helpers shared by the cache tests: temporary directories, fake cubins, warning capture,
/// environment overrides, forked children and raw SQLite access.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cache/disk_cache.hpp"
#include "cache/key.hpp"

namespace mxjit::cache::test {

namespace fs = std::filesystem;

/// A fresh directory under the system temp dir, removed (with everything in it) at scope end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "mxjit-cache-test-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    // Tests chmod things; make everything removable again first.
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::end(it);
         it.increment(ec))
      if (it->is_directory()) ::chmod(it->path().c_str(), 0700);
    ::chmod(path_.c_str(), 0700);
    fs::remove_all(path_, ec);
  }
  /// The directory.
  const fs::path& path() const { return path_; }
  /// A path inside it.
  fs::path operator/(std::string_view name) const { return path_ / name; }

 private:
  fs::path path_;
};

/// `n` pseudo-random bytes, the same for the same seed.
inline std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

/// The key for test kernel number `i`.
inline Hash128 test_key(int64_t i) { return hash128("test-kernel-" + std::to_string(i)); }

/// A fake compiled kernel: `bytes` random bytes determined by `i`.
inline CacheEntry test_entry(int64_t i, size_t bytes = 20 * 1024) {
  CacheEntry e;
  e.key = test_key(i);
  e.kernel_name = "mx_cast_" + std::to_string(i);
  e.arch = "sm_90a";
  e.toolchain_version = "12.8";
  e.blob = random_bytes(bytes, static_cast<uint64_t>(i) * 7919 + 1);
  e.meta = "grid=128 block=256 smem=0 i=" + std::to_string(i);
  e.compile_ms = 10.0 + static_cast<double>(i);
  return e;
}

/// Collects warning lines for its lifetime instead of printing them.
class WarningCapture {
 public:
  WarningCapture() {
    previous_ = DiskCache::set_warning_sink([this](std::string_view line) {
      std::lock_guard lock(mu_);
      lines_.emplace_back(line);
    });
  }
  WarningCapture(const WarningCapture&) = delete;
  WarningCapture& operator=(const WarningCapture&) = delete;
  ~WarningCapture() { DiskCache::set_warning_sink(std::move(previous_)); }
  /// The lines so far.
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  /// Number of lines so far.
  size_t count() const { return lines().size(); }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
  WarningSink previous_;
};

/// Sets (or, with nullopt, unsets) an environment variable, restoring it at scope end.
class EnvVar {
 public:
  EnvVar(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;
  ~EnvVar() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// Runs `fn` in a forked child and returns its exit status (fn's result; 99 if it threw,
/// 98 if it died). The child leaves with _exit so no test-framework state runs twice.
inline int run_in_child(const std::function<int()>& fn) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      rc = fn();
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 98;
}

/// Runs SQL on a file through a separate raw connection (to inject faults or count rows);
/// returns the first column of the first row, or "".
inline std::string raw_sql(const fs::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("raw open failed: " + file.string());
  }
  std::string first;
  auto cb = [](void* out, int n, char** vals, char**) {
    auto* s = static_cast<std::string*>(out);
    if (s->empty() && n > 0 && vals[0]) *s = vals[0];
    return 0;
  };
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), cb, &first, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("raw sql failed: " + msg);
  return first;
}

/// Number of rows in the kernels table of `file`.
inline int64_t row_count(const fs::path& file) {
  return std::stoll(raw_sql(file, "SELECT count(*) FROM kernels"));
}

/// Files in `dir` whose names contain `part`.
inline std::vector<fs::path> files_containing(const fs::path& dir, std::string_view part) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(part) != std::string::npos) out.push_back(e.path());
  return out;
}

/// Permission bits of `p`.
inline unsigned mode_of(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

}  // namespace mxjit::cache::test

namespace mxjit::cache {

/// Reaches into a DiskCache to simulate what a test cannot produce for real (a full disk, a
/// short lock timeout).
class DiskCacheTestPeer {
 public:
  /// Runs SQL on the cache's own connection.
  static void exec(DiskCache& c, const std::string& sql) {
    std::lock_guard lock(c.mu_);
    c.db_->exec(sql);
  }
  /// Shortens the lock waits so busy paths finish quickly.
  static void set_timeouts(DiskCache& c, std::chrono::milliseconds busy,
                           std::chrono::milliseconds give_up) {
    std::lock_guard lock(c.mu_);
    c.options_.busy_timeout = busy;
    c.options_.write_give_up = give_up;
    c.db_->set_busy_timeout(busy);
  }
};

}  // namespace mxjit::cache
