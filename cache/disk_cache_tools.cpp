// The maintenance side of DiskCache, for the command-line tool: list, verify, clear, dump.
#include "cache/disk_cache.hpp"

#include <sqlite3.h>

#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "cache/key.hpp"

namespace mxjit::cache {

using detail::Query;
using detail::SqliteError;

std::vector<CacheEntry> DiskCache::list(bool with_blobs) {
  std::lock_guard lock(mu_);
  std::vector<CacheEntry> out;
  if (!usable_locked()) return out;
  try {
    Query q = db_->query(
        "SELECT key, kernel_name, arch, toolchain, CASE WHEN ?1 THEN blob END, meta, compile_ms,"
        " created, last_used, length(blob) FROM kernels ORDER BY last_used DESC, key");
    q.bind(1, static_cast<int64_t>(with_blobs));
    while (q.step()) {
      CacheEntry e;
      e.key = parse_hash128(q.text(0)).value_or(Hash128{});
      e.kernel_name = q.text(1);
      e.arch = q.text(2);
      e.toolchain_version = q.text(3);
      e.blob = q.blob(4);
      e.meta = q.text(5);
      e.compile_ms = q.real(6);
      e.created_unix = q.int64(7);
      e.last_used_unix = q.int64(8);
      e.blob_bytes = q.int64(9);
      out.push_back(std::move(e));
    }
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "listing");
  }
  return out;
}

VerifyReport DiskCache::verify(bool remove_bad) {
  std::lock_guard lock(mu_);
  VerifyReport report;
  report.rebuilt_at_open = rebuilt_at_open_;
  if (!usable_locked()) return report;
  try {
    report.file_problem = detail::quick_check(*db_);
    report.file_ok = report.file_problem.empty();
    if (!report.file_ok) {
      if (remove_bad) handle_error_locked(SqliteError(report.file_problem, SQLITE_CORRUPT), "verifying");
      return report;
    }
    std::vector<std::pair<std::string, std::string>> bad;  // key, stored checksum
    {
      Query q = db_->query("SELECT key, kernel_name, blob, meta, checksum FROM kernels");
      while (q.step()) {
        CacheEntry e;
        const std::string key = q.text(0);
        e.kernel_name = q.text(1);
        e.blob = q.blob(2);
        e.meta = q.text(3);
        if (q.text(4) == detail::entry_checksum(key, e)) {
          ++report.ok;
        } else {
          ++report.bad;
          report.bad_keys.push_back(key);
          bad.emplace_back(key, q.text(4));
        }
      }
    }
    if (remove_bad && !bad.empty()) {
      write_locked([&] {
        for (const auto& [key, sum] : bad)
          db_->query("DELETE FROM kernels WHERE key = ?1 AND checksum = ?2")
              .bind(1, key)
              .bind(2, sum)
              .run();
      }, "removing bad entries");
      evicted_bad_.fetch_add(static_cast<int64_t>(bad.size()));
    }
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "verifying");
  }
  return report;
}

bool DiskCache::clear() {
  std::lock_guard lock(mu_);
  if (!usable_locked()) return false;
  pending_touches_.clear();
  try {
    if (!write_locked([&] { db_->exec("DELETE FROM kernels; DELETE FROM tuned;"); }, "clearing")) return false;
  } catch (const std::exception& ex) {
    handle_error_locked(ex, "clearing");
    return false;
  }
  // VACUUM needs the file to itself; when others have it open, the space is reused later.
  try {
    db_->set_busy_timeout(std::chrono::milliseconds(0));
    db_->exec("VACUUM");
  } catch (const std::exception&) {
  }
  if (db_) db_->set_busy_timeout(options_.busy_timeout);
  return true;
}

bool DiskCache::dump(const Hash128& key, const std::filesystem::path& out) {
  std::optional<CacheEntry> e;
  {
    std::lock_guard lock(mu_);
    if (!usable_locked()) return false;
    try {
      std::string stored;
      e = fetch_locked(key, true, &stored);
      if (e && stored != detail::entry_checksum(key.hex(), *e)) e.reset();
    } catch (const std::exception& ex) {
      handle_error_locked(ex, "reading");
      return false;
    }
  }
  if (!e) return false;
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f.write(e->blob.data(), static_cast<std::streamsize>(e->blob.size()));
  f.close();
  if (!f) throw Error(fmt::format("cannot write the cubin of {} to {}", key.hex(), out.string()));
  return true;
}

}  // namespace mxjit::cache
