#include "cache/disk_cache.hpp"
#include "cache/key.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

namespace mxjit::cache {

using detail::Query;
using detail::SqliteError;

namespace {

constexpr const char* kFileName = "kernels.sqlite";
// last_used is a coarse recency signal for pruning; refreshing it at most hourly keeps reads
// from turning into writes (and their fsyncs) on the hit path.
constexpr int64_t kTouchIntervalS = 3600;
constexpr size_t kMaxPendingTouches = 256;
// quick_check reads every page; at open it is only affordable on small files. Larger files rely
// on SQLite's own SQLITE_CORRUPT errors and the per-blob checksums; verify() checks fully.
constexpr int64_t kQuickCheckMaxBytes = 256 * 1024;

std::mutex g_sink_mu;
WarningSink g_sink;

// One line: control characters (a path's newline, SQLite's multi-line reports) are escaped.
void emit_warning(const std::string& text) {
  std::string line;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    line += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  std::lock_guard lock(g_sink_mu);
  if (g_sink) g_sink(line);
  else std::fprintf(stderr, "%s\n", line.c_str());
}

int64_t now_unix() { return static_cast<int64_t>(std::time(nullptr)); }

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string detail::entry_checksum(const std::string& key_hex, const CacheEntry& e) {
  // Covers the name and metadata too, and binds them to the key, so no part of a row can be
  // damaged or swapped unnoticed.
  return Hasher()
      .add(std::string_view("mxjit.cache.blob.v1"))
      .add(key_hex)
      .add(e.kernel_name)
      .add(e.blob)
      .add(e.meta)
      .digest()
      .hex();
}

// ---- construction, environment, warnings ----------------------------------------------------

std::filesystem::path DiskCache::default_dir() {
  if (std::string d = env("MXJIT_CACHE_DIR"); !d.empty()) return d;
  // The XDG spec says relative values are invalid and must be ignored.
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty() && x.front() == '/')
    return std::filesystem::path(x) / "mxjit";
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (home.empty()) return {};
  return std::filesystem::path(home) / ".cache" / "mxjit";
}

bool DiskCache::disabled_by_env() {
  const std::string raw = env("MXJIT_CACHE");
  std::string v;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) v += char(std::tolower(static_cast<unsigned char>(c)));
  if (v == "0" || v == "off" || v == "false" || v == "no") return true;
  if (!(v.empty() || v == "1" || v == "on" || v == "true" || v == "yes"))
    emit_warning(fmt::format("mxjit: warning: MXJIT_CACHE='{}' is not one of 0, off, false, no (cache off) or 1, on, "
                             "true, yes (cache on); keeping the kernel cache on", raw));
  return false;
}

std::unique_ptr<DiskCache> DiskCache::open_default() {
  if (disabled_by_env()) return std::unique_ptr<DiskCache>(new DiskCache(Disabled{}));
  return std::make_unique<DiskCache>(default_dir());
}

WarningSink DiskCache::set_warning_sink(WarningSink sink) {
  std::lock_guard lock(g_sink_mu);
  std::swap(g_sink, sink);
  return sink;
}

DiskCache::DiskCache(Disabled) : pid_(::getpid()) {}

DiskCache::DiskCache(std::filesystem::path dir)
    : dir_(std::move(dir)), file_(dir_.empty() ? std::filesystem::path() : dir_ / kFileName),
      pid_(::getpid()) {
  options_.quick_check_max_bytes = kQuickCheckMaxBytes;
  std::lock_guard lock(mu_);
  open_locked();
}

DiskCache::~DiskCache() {
  std::lock_guard lock(mu_);
  if (::getpid() != pid_) {
    if (db_) db_->release();
    return;
  }
  if (!db_ || pending_touches_.empty()) return;
  try {
    // At exit, never wait long: a skipped refresh only makes pruning slightly less accurate.
    db_->set_busy_timeout(std::chrono::milliseconds(100));
    if (!detail::begin_immediate(*db_, std::chrono::milliseconds(200))) return;
    detail::WriteTxn txn(*db_);
    flush_touches_locked();
    txn.commit();
  } catch (const std::exception&) {
  }
}

void DiskCache::warn_locked(std::string_view reason, std::string_view consequence) {
  emit_warning(fmt::format("mxjit: warning: kernel cache {} {}; {}",
                           file_.empty() ? std::string("(no location)") : file_.string(), reason,
                           consequence));
}

void DiskCache::degrade_locked(std::string_view reason) {
  warn_locked(reason);
  unusable_ = std::string(reason);
  db_.reset();
  enabled_ = false;
  pending_touches_.clear();
}

void DiskCache::open_locked() {
  enabled_ = false;
  wal_ = false;
  db_.reset();
  if (std::string r = detail::prepare_private_dir(dir_); !r.empty()) {
    unusable_ = dir_.empty() ? r : fmt::format("cannot be used: its directory {}", r);
    warn_locked(unusable_);
    return;
  }
  try {
    detail::OpenedFile opened = detail::open_cache_file(file_, options_);
    db_ = std::move(opened.db);
    file_id_ = opened.id;
    wal_ = opened.wal;
    enabled_ = true;
    unusable_.clear();
    if (!opened.rebuilt_because.empty()) {
      const std::string done = opened.moved_to.empty()
                                    ? std::string("another process replaced it with a new one")
                                    : fmt::format("moved it aside to {} and started a new one", opened.moved_to);
      warn_locked(opened.rebuilt_because, done);
      rebuilt_at_open_ = fmt::format("{}; {}", opened.rebuilt_because, done);
    }
  } catch (const std::exception& e) {
    db_.reset();
    // SQLite's own messages name a statement, not what happened to the file: say it.
    unusable_ = dynamic_cast<const SqliteError*>(&e) ? fmt::format("cannot be used ({})", e.what()) : e.what();
    warn_locked(unusable_);
  }
}

bool DiskCache::usable_locked() {
  if (::getpid() != pid_) {
    // Forked child: the parent's connection (and its locks) are not ours to use or close.
    if (db_) db_->release();
    db_.reset();
    pending_touches_.clear();
    pid_ = ::getpid();
    if (enabled_) open_locked();
  }
  return enabled_ && db_;
}

void DiskCache::handle_error_locked(const std::exception& e, std::string_view doing) {
  const auto* se = dynamic_cast<const SqliteError*>(&e);
  if (se && detail::is_busy(se->code())) {
    if (!warned_busy_) warn_locked(fmt::format("stayed locked while {}", doing), "skipped it");
    warned_busy_ = true;
    return;
  }
  if (detail::file_id(file_) != file_id_) {
    // Another process moved a bad file aside (and warned); our connection is on the old inode.
    open_locked();
    return;
  }
  if (se) {
    if (detail::is_corruption(se->code())) {
      db_.reset();
      try {
        const std::string moved = detail::move_aside(file_, file_id_);
        warn_locked(fmt::format("turned out corrupt while {} ({})", doing, e.what()),
                    moved.empty() ? std::string("starting a new one")
                                  : fmt::format("moved it aside to {} and started a new one", moved));
        open_locked();
      } catch (const std::exception& again) {
        degrade_locked(fmt::format("turned out corrupt and {}", again.what()));
      }
      return;
    }
  }
  degrade_locked(fmt::format("failed while {} ({})", doing, e.what()));
}

// ---- reads and writes -----------------------------------------------------------------------

std::optional<CacheEntry> DiskCache::fetch_locked(const Hash128& key, bool with_blob,
                                                  std::string* checksum) {
  Query q = db_->query(
      "SELECT kernel_name, arch, toolchain, blob, meta, compile_ms, created, last_used, checksum,"
      " length(blob) FROM kernels WHERE key = ?1");
  q.bind(1, key.hex());
  if (!q.step()) return std::nullopt;
  CacheEntry e;
  e.key = key;
  e.kernel_name = q.text(0);
  e.arch = q.text(1);
  e.toolchain_version = q.text(2);
  if (with_blob) e.blob = q.blob(3);
  e.meta = q.text(4);
  e.compile_ms = q.real(5);
  e.created_unix = q.int64(6);
  e.last_used_unix = q.int64(7);
  if (checksum) *checksum = q.text(8);
  e.blob_bytes = q.int64(9);
  return e;
}

bool DiskCache::write_locked(const std::function<void()>& body, std::string_view doing) {
  if (!detail::begin_immediate(*db_, options_.write_give_up)) {
    if (!warned_busy_) warn_locked(fmt::format("stayed locked for {} s while {}",
                                               options_.write_give_up.count() / 1000, doing),
                                   "skipped it");
    warned_busy_ = true;
    return false;
  }
  detail::WriteTxn txn(*db_);
  body();
  flush_touches_locked();
  txn.commit();
  return true;
}

void DiskCache::flush_touches_locked() {
  if (pending_touches_.empty()) return;
  const int64_t now = now_unix();
  for (const std::string& key : pending_touches_) {
    Query q = db_->query("UPDATE kernels SET last_used = ?1 WHERE key = ?2");
    q.bind(1, now).bind(2, key).run();
  }
  pending_touches_.clear();
}

std::optional<CacheEntry> DiskCache::get(const Hash128& key) {
  std::lock_guard lock(mu_);
  if (usable_locked()) {
    try {
      std::string stored;
      std::optional<CacheEntry> e = fetch_locked(key, true, &stored);
      if (e && stored != detail::entry_checksum(key.hex(), *e)) {
        // Delete only the bad row: another process may already have replaced it.
        write_locked([&] {
          db_->query("DELETE FROM kernels WHERE key = ?1 AND checksum = ?2")
              .bind(1, key.hex())
              .bind(2, stored)
              .run();
        }, "removing a bad entry");
        evicted_bad_.fetch_add(1);
        warn_locked(fmt::format("entry {} failed its checksum", key.hex()), "removed it");
        e.reset();
      }
      if (e) {
        if (now_unix() - e->last_used_unix >= kTouchIntervalS) {
          pending_touches_.push_back(key.hex());
          if (pending_touches_.size() >= kMaxPendingTouches)
            write_locked([] {}, "recording last-used times");
        }
        disk_hits_.fetch_add(1);
        compile_ms_saved_ += e->compile_ms;
        return e;
      }
    } catch (const std::exception& ex) {
      handle_error_locked(ex, "reading");
    }
  }
  disk_misses_.fetch_add(1);
  return std::nullopt;
}

void DiskCache::put(const CacheEntry& entry) {
  std::lock_guard lock(mu_);
  if (!usable_locked()) return;
  try {
    const std::string hex = entry.key.hex();
    const int64_t now = now_unix();
    bool added = false;
    const bool done = write_locked([&] {
      db_->query(
             "INSERT OR IGNORE INTO kernels(key, kernel_name, arch, toolchain, blob, checksum,"
             " meta, compile_ms, created, last_used) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)")
          .bind(1, hex)
          .bind(2, entry.kernel_name)
          .bind(3, entry.arch)
          .bind(4, entry.toolchain_version)
          .bind_blob(5, entry.blob)
          .bind(6, detail::entry_checksum(hex, entry))
          .bind(7, entry.meta)
          .bind(8, entry.compile_ms)
          .bind(9, entry.created_unix ? entry.created_unix : now)
          .bind(10, now)
          .run();
      added = db_->changes() == 1;
    }, "writing");
    if (done && added) writes_.fetch_add(1);
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "writing");
  }
}

void DiskCache::remove(const Hash128& key) {
  std::lock_guard lock(mu_);
  if (!usable_locked()) return;
  try {
    write_locked([&] { db_->query("DELETE FROM kernels WHERE key = ?1").bind(1, key.hex()).run(); },
                 "removing an entry");
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "removing an entry");
  }
}

std::optional<std::string> DiskCache::get_tuned(std::string_view key) {
  std::lock_guard lock(mu_);
  if (!usable_locked()) return std::nullopt;
  try {
    Query q = db_->query("SELECT value FROM tuned WHERE key = ?1");
    q.bind(1, key);
    if (q.step()) return q.text(0);
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "reading a tuning result");
  }
  return std::nullopt;
}

void DiskCache::put_tuned(std::string_view key, std::string_view value) {
  std::lock_guard lock(mu_);
  if (!usable_locked()) return;
  try {
    write_locked([&] {
      db_->query("INSERT OR REPLACE INTO tuned(key, value, created) VALUES(?1, ?2, ?3)")
          .bind(1, key)
          .bind(2, value)
          .bind(3, now_unix())
          .run();
    }, "writing a tuning result");
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "writing a tuning result");
  }
}

// ---- observers ------------------------------------------------------------------------------

bool DiskCache::enabled() const {
  std::lock_guard lock(mu_);
  return enabled_;
}

std::string DiskCache::unusable_reason() const {
  std::lock_guard lock(mu_);
  return enabled_ ? std::string() : unusable_;
}

void DiskCache::count_memory_lookup(bool hit) noexcept {
  (hit ? mem_hits_ : mem_misses_).fetch_add(1, std::memory_order_relaxed);
}

CacheStats DiskCache::stats() const {
  std::lock_guard lock(mu_);
  return CacheStats{disk_hits_.load(), disk_misses_.load(), mem_hits_.load(), mem_misses_.load(),
                    writes_.load(),    evicted_bad_.load(), compile_ms_saved_};
}

int64_t DiskCache::file_bytes() const {
  std::lock_guard lock(mu_);
  if (!enabled_) return 0;
  int64_t total = 0;
  std::error_code ec;
  for (const std::string& name : {file_.string(), file_.string() + "-wal"}) {
    const auto n = std::filesystem::file_size(name, ec);
    if (!ec) total += static_cast<int64_t>(n);
  }
  return total;
}

std::filesystem::path DiskCache::file() const { return file_; }

bool DiskCache::wal() const {
  std::lock_guard lock(mu_);
  return enabled_ && wal_;
}

}  // namespace mxjit::cache
