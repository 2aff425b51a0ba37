#pragma once
/// \file Tier 2 of the kernel cache: compiled kernels in an SQLite file shared by every process
/// of a user (docs/design.md §7). Opening and lookups never throw: on trouble the cache degrades to
/// memory-only with one warning line, and callers simply compile.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_file.hpp"
#include "dsl/hash.hpp"

namespace mxjit::cache {

/// One compiled kernel as stored in the disk cache.
struct CacheEntry {
  /// Content key (content_key() of its KeyParts).
  Hash128 key;
  /// Mangled or extern "C" name of the kernel inside the cubin.
  std::string kernel_name;
  /// Exact architecture string, e.g. "sm_90a".
  std::string arch;
  /// NVRTC version that produced the cubin.
  std::string toolchain_version;
  /// The cubin bytes (empty in list(false) results).
  std::string blob;
  /// Opaque launch metadata text, owned by the runtime.
  std::string meta;
  /// How long the compilation took; what a hit saves.
  double compile_ms = 0;
  /// When the row was written (0 in put(): now).
  int64_t created_unix = 0;
  /// When the row was last read (refreshed at most hourly).
  int64_t last_used_unix = 0;
  /// Size of the blob in bytes, filled by get() and list() even without blobs.
  int64_t blob_bytes = 0;
};

/// Counters of one DiskCache object since it was made (not persisted).
struct CacheStats {
  /// get() calls answered from the file / not answered (including memory-only mode).
  int64_t disk_hits = 0, disk_misses = 0;
  /// Tier-1 lookups reported through count_memory_lookup().
  int64_t mem_hits = 0, mem_misses = 0;
  /// Rows this object added to the file.
  int64_t writes = 0;
  /// Rows removed because their checksum did not match.
  int64_t evicted_bad = 0;
  /// Sum of compile_ms over disk hits.
  double compile_ms_saved = 0;
};

/// Result of DiskCache::verify().
struct VerifyReport {
  /// Rows whose checksum matches / does not match.
  int64_t ok = 0, bad = 0;
  /// Hex keys of the bad rows.
  std::vector<std::string> bad_keys;
  /// False when `PRAGMA quick_check` found the file itself damaged.
  bool file_ok = true;
  /// quick_check's complaint when file_ok is false.
  std::string file_problem;
  /// Why the file was moved aside and a new one started when this cache opened it, and where it
  /// went ("" when it was not): the damage verify() would otherwise never see.
  std::string rebuilt_at_open;
};

namespace detail {
/// The checksum stored with a row: XXH3-128 (hex) over the key, kernel name, blob and metadata.
std::string entry_checksum(const std::string& key_hex, const CacheEntry& entry);
}  // namespace detail

/// A held cross-process compile claim (DiskCache::lock_key); released (unlocked, closed) on destruction.
class KeyLock {
 public:
  explicit KeyLock(int fd) : fd_(fd) {}
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  ~KeyLock();

 private:
  int fd_;
};

/// Receives each warning line (without newline); the default writes it to stderr.
using WarningSink = std::function<void(std::string_view)>;

/// The SQLite kernel store. Thread-safe (one mutex around the connection) and fork-safe (a child
/// opens its own connection). Never throws from get/put; tool operations (list, verify, clear,
/// dump) throw only for the caller's own mistakes (an unwritable dump target).
class DiskCache {
 public:
  /// `$MXJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/mxjit`, else `$HOME/.cache/mxjit` (empty path if
  /// none can be found).
  static std::filesystem::path default_dir();
  /// True when `MXJIT_CACHE` is "0", "off", "false" or "no" (any case, surrounding space
  /// ignored); "1", "on", "true", "yes" and "" keep the cache on, and any other value keeps it on
  /// after one warning naming the accepted ones.
  static bool disabled_by_env();
  /// The cache the runtime uses: default_dir(), or a silent memory-only one when disabled_by_env().
  static std::unique_ptr<DiskCache> open_default();
  /// Replaces the process-wide warning sink (an empty function restores stderr); returns the
  /// previous one so tests can restore it.
  static WarningSink set_warning_sink(WarningSink sink);

  /// Opens (creating if needed) `dir/kernels.sqlite`. Never throws: on trouble the object is
  /// memory-only (enabled() false) after exactly one warning.
  explicit DiskCache(std::filesystem::path dir);
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;
  /// Flushes pending last-used times (briefly, skipped when busy) and closes.
  ~DiskCache();

  /// False in memory-only mode: every get() misses and put() stores nothing.
  bool enabled() const;
  /// Why the cache is memory-only, as its warning said ("" while it is enabled, and for a cache
  /// disabled by MXJIT_CACHE).
  std::string unusable_reason() const;

  /// The entry for `key` with a verified checksum, or nullopt. A row whose checksum does not
  /// match is deleted and counted in evicted_bad.
  std::optional<CacheEntry> get(const Hash128& key);
  /// Stores a compiled kernel; a row already present for the key is kept (first writer wins).
  void put(const CacheEntry& entry);
  /// Deletes the row for `key`, e.g. when its cubin failed to load.
  void remove(const Hash128& key);

  /// A tuning result stored under `key`, or nullopt.
  std::optional<std::string> get_tuned(std::string_view key);
  /// Stores (replacing) a tuning result.
  void put_tuned(std::string_view key, std::string_view value);

  /// Every entry, most recently used first; blobs only when `with_blobs`.
  std::vector<CacheEntry> list(bool with_blobs = false);
  /// Checks the file (quick_check) and every row's checksum; deletes bad rows when `remove_bad`
  /// (and rebuilds a damaged file).
  VerifyReport verify(bool remove_bad);
  /// Deletes every kernel and tuning row and compacts the file when no one else uses it. Returns
  /// false when nothing was deleted (memory-only, the file stayed locked, a write failed: the
  /// warning says why).
  bool clear();
  /// Writes the verified cubin of `key` to `out` (for cuobjdump); false when absent or bad.
  /// Throws Error when `out` cannot be written.
  bool dump(const Hash128& key, const std::filesystem::path& out);

  /// Records one tier-1 lookup so stats() covers both tiers.
  void count_memory_lookup(bool hit) noexcept;
  /// The counters so far.
  CacheStats stats() const;
  /// Bytes on disk: the file plus its WAL (0 in memory-only mode).
  int64_t file_bytes() const;
  /// `dir/kernels.sqlite`.
  std::filesystem::path file() const;
  /// True when the file uses WAL (only on an SQLite with the WAL-reset fix).
  bool wal() const;

  /// Claims, across processes, the right to compile the kernel of `key`: an exclusive flock on one
  /// of 256 lock files under `dir/locks` (picked by the key), held until the returned object dies.
  /// Ranks of one job that miss the same key at once then compile it once: the others wait here and
  /// find it with get() afterwards. Null in memory-only mode or when the lock cannot be taken
  /// (callers then just compile). Blocks while another holder compiles. See cache/key_lock.cpp.
  std::unique_ptr<KeyLock> lock_key(const Hash128& key);

 private:
  struct Disabled {};
  explicit DiskCache(Disabled);

  void open_locked();
  bool usable_locked();
  void warn_locked(std::string_view reason, std::string_view consequence = "using memory only");
  void degrade_locked(std::string_view reason);
  void handle_error_locked(const std::exception& e, std::string_view doing);
  std::optional<CacheEntry> fetch_locked(const Hash128& key, bool with_blob, std::string* checksum);
  bool write_locked(const std::function<void()>& body, std::string_view doing);
  void flush_touches_locked();

  friend class DiskCacheTestPeer;

  std::filesystem::path dir_, file_;
  mutable std::mutex mu_;
  std::unique_ptr<detail::Connection> db_;
  detail::FileId file_id_;
  detail::OpenOptions options_;
  pid_t pid_ = 0;
  bool enabled_ = false;
  bool wal_ = false;
  bool warned_busy_ = false;
  std::string unusable_;         // the reason of the warning that made the cache memory-only
  std::string rebuilt_at_open_;  // the warning's words when open_locked() moved a file aside
  std::vector<std::string> pending_touches_;
  std::atomic<int64_t> disk_hits_{0}, disk_misses_{0}, mem_hits_{0}, mem_misses_{0};
  std::atomic<int64_t> writes_{0}, evicted_bad_{0};
  double compile_ms_saved_ = 0;
};

}  // namespace mxjit::cache
