#include "cache/cache_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace mxjit::cache::detail {

namespace {

constexpr const char* kCreateTables = R"sql(
CREATE TABLE IF NOT EXISTS kernels(
  key TEXT PRIMARY KEY, kernel_name TEXT NOT NULL, arch TEXT NOT NULL, toolchain TEXT NOT NULL,
  blob BLOB NOT NULL, checksum TEXT NOT NULL, meta TEXT NOT NULL, compile_ms REAL NOT NULL,
  created INTEGER NOT NULL, last_used INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tuned(key TEXT PRIMARY KEY, value TEXT NOT NULL, created INTEGER NOT NULL);
)sql";

std::string errno_text(int err) { return std::strerror(err); }

std::string ownership_reason(const struct stat& st) {
  if (st.st_uid != geteuid())
    return fmt::format("is owned by uid {}, not by this user (uid {})", st.st_uid, geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("is writable by other users (mode {:04o})", st.st_mode & 07777);
  return {};
}

/// What the header and catalogue of an open file say.
struct FileState {
  int64_t application_id = 0, user_version = 0, objects = 0;
};

FileState read_state(Connection& db) {
  FileState s;
  s.application_id = db.pragma_int("application_id");
  s.user_version = db.pragma_int("user_version");
  Query q = db.query("SELECT count(*) FROM sqlite_master");
  s.objects = q.step() ? q.int64(0) : 0;
  return s;
}

/// read_state() in one read transaction: separate statements could straddle another process's
/// initialization and see its header before its tables (or the reverse).
FileState read_state_atomically(Connection& db) {
  db.exec("BEGIN");
  try {
    FileState s = read_state(db);
    db.exec("COMMIT");
    return s;
  } catch (...) {
    db.rollback_quietly();
    throw;
  }
}

enum class Verdict { ready, initialize, migrate, reject };

Verdict judge(const FileState& s, std::string& reason) {
  if (s.application_id == 0 && s.user_version == 0 && s.objects == 0) return Verdict::initialize;
  if (s.application_id != kApplicationId) {
    reason = fmt::format("is a foreign SQLite file (application_id {:#x}, {} schema objects)",
                         static_cast<uint32_t>(s.application_id), s.objects);
    return Verdict::reject;
  }
  if (s.user_version > kSchemaVersion) {
    reason = fmt::format("has schema version {}, newer than this mxjit's {}", s.user_version,
                         kSchemaVersion);
    return Verdict::reject;
  }
  if (s.user_version < kSchemaVersion) return s.user_version == 0 ? Verdict::initialize
                                                                  : Verdict::migrate;
  return Verdict::ready;
}

/// Upgrades the tables one version at a time; false when `from` has no migration.
bool migrate_from(Connection& db, int64_t from) {
  (void)db;
  switch (from) {
    // Version 1 is the first layout; future versions add `case N:` steps that fall through.
    default: return false;
  }
}

/// Initializes or migrates inside one write transaction, re-judging under the lock because
/// another process may have done it first. Returns the rejection reason, or "".
std::string upgrade(Connection& db, const OpenOptions& options) {
  if (!begin_immediate(db, options.write_give_up))
    throw Error("stayed locked by another process while initializing");
  WriteTxn txn(db);
  std::string reason;
  const FileState s = read_state(db);
  switch (judge(s, reason)) {
    case Verdict::ready: break;
    case Verdict::reject: return reason;
    case Verdict::initialize:
      db.exec(kCreateTables);
      db.exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
      db.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
      break;
    case Verdict::migrate:
      for (int64_t v = s.user_version; v < kSchemaVersion; ++v) {
        if (!migrate_from(db, v))
          return fmt::format("has schema version {}, which cannot be migrated", s.user_version);
      }
      db.exec(fmt::format("PRAGMA user_version = {}", kSchemaVersion));
      break;
  }
  txn.commit();
  return {};
}

/// Why the 100-byte SQLite header of `file` makes it useless as a cache although SQLite opens it:
/// file format versions other than 1 and 2 (bytes 18, 19: read-only, or not readable) or a schema
/// format past 4 (bytes 44-47: "unsupported file format"), which would leave every process
/// degraded, the file never moved aside. "" when the header is sound, too short or not SQLite's
/// (SQLite itself then reports the file corrupt or not a database).
std::string header_problem(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  unsigned char h[100];
  const ssize_t n = ::pread(fd, h, sizeof h, 0);
  ::close(fd);
  if (n != ssize_t(sizeof h) || std::memcmp(h, "SQLite format 3", 16) != 0) return {};
  if (h[18] < 1 || h[18] > 2 || h[19] < 1 || h[19] > 2)
    return fmt::format("has a damaged SQLite header (file format versions {} and {} in bytes 18 and 19, not 1 or 2)",
                       h[18], h[19]);
  const uint32_t schema = uint32_t(h[44]) << 24 | uint32_t(h[45]) << 16 | uint32_t(h[46]) << 8 | h[47];
  if (schema > 4)
    return fmt::format("has a damaged SQLite header (schema format {} in bytes 44-47, not 0 to 4)", schema);
  return {};
}

/// Recognizes the file and brings its schema up to date. Returns why it must be rebuilt, or "".
std::string validate(Connection& db, const std::filesystem::path& file,
                     const OpenOptions& options) {
  try {
    std::string reason;
    const Verdict v = judge(read_state_atomically(db), reason);
    if (v == Verdict::reject) return reason;
    if (v != Verdict::ready) {
      reason = upgrade(db, options);
      if (!reason.empty()) return reason;
    }
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(file, ec);
    if (!ec && static_cast<int64_t>(bytes) <= options.quick_check_max_bytes) return quick_check(db);
    return {};
  } catch (const SqliteError& e) {
    if (is_corruption(e.code())) return fmt::format("is corrupt or not a database ({})", e.what());
    throw;
  }
}

/// Selects WAL only where SQLite has the WAL-reset fix; otherwise a rollback journal.
bool configure_journal(Connection& db) {
  const bool want_wal = wal_is_safe(sqlite_version_number());
  std::string mode = db.pragma_text("journal_mode");
  if (want_wal != (mode == "wal")) {
    try {
      Query q = db.query(want_wal ? "PRAGMA journal_mode = WAL" : "PRAGMA journal_mode = DELETE");
      if (q.step()) mode = q.text(0);
    } catch (const SqliteError& e) {
      // Switching needs an exclusive lock; if others hold the file, keep the current mode.
      if (!is_busy(e.code())) throw;
    }
  }
  if (mode == "wal" && !want_wal)
    throw Error(fmt::format("is in WAL mode, which SQLite {} cannot use safely (WAL-reset bug)",
                            sqlite_version_text()));
  db.exec("PRAGMA synchronous = NORMAL");
  return mode == "wal";
}

}  // namespace

std::string prepare_private_dir(const std::filesystem::path& dir) {
  if (dir.empty()) return "has no location (set MXJIT_CACHE_DIR, XDG_CACHE_HOME or HOME)";
  // Create each missing component 0700 (XDG base-directory rule), parents included.
  std::filesystem::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("cannot be created ({}: {})", prefix.string(), errno_text(errno));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return fmt::format("cannot be examined ({})", errno_text(errno));
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (std::string r = ownership_reason(st); !r.empty()) return r;
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("is not writable ({})", errno_text(errno));
  return {};
}

std::string untrusted_file_reason(const std::filesystem::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return {};
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  return ownership_reason(st);
}

FileId file_id(const std::filesystem::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return {};
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

std::string quick_check(Connection& db) {
  try {
    Query q = db.query("PRAGMA quick_check(1)");
    std::string first = q.step() ? q.text(0) : std::string("no result");
    if (first == "ok") return {};
    std::replace(first.begin(), first.end(), '\n', ' ');  // SQLite's report spans lines; a warning does not
    return fmt::format("fails quick_check ({})", first);
  } catch (const SqliteError& e) {
    if (is_corruption(e.code())) return fmt::format("fails quick_check ({})", e.what());
    throw;
  }
}

std::string move_aside(const std::filesystem::path& file, const FileId& expected) {
  if (file_id(file) != expected) return {};
  const std::string from = file.string();
  const std::string to = fmt::format("{}.bad-{}-{}", from, std::time(nullptr), ::getpid());
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    if (errno == ENOENT) return {};
    throw Error(fmt::format("cannot be moved aside ({})", errno_text(errno)));
  }
  // A stale journal left next to a new file would be "rolled back" into it: move it along.
  for (const char* suffix : {"-journal", "-wal"})
    std::rename((from + suffix).c_str(), (to + suffix).c_str());
  ::unlink((from + "-shm").c_str());
  return to;
}

OpenedFile open_cache_file(const std::filesystem::path& file, const OpenOptions& options) {
  OpenedFile out;
  for (int attempt = 0;; ++attempt) {
    if (std::string r = untrusted_file_reason(file); !r.empty()) throw Error(r);
    // Create the file ourselves so its mode is 0600 whatever the umask; SQLite takes an empty
    // file for an empty database.
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw Error(fmt::format("cannot be opened ({})", errno_text(errno)));
    ::close(fd);
    out.id = file_id(file);
    out.db = std::make_unique<Connection>(file);
    out.db->set_busy_timeout(options.busy_timeout);
    std::string bad = header_problem(file);
    if (bad.empty()) bad = validate(*out.db, file, options);
    if (bad.empty()) {
      out.wal = configure_journal(*out.db);
      return out;
    }
    if (attempt > 0) throw Error(fmt::format("{}, even after rebuilding it", bad));
    out.db.reset();
    out.rebuilt_because = bad;
    out.moved_to = move_aside(file, out.id);
  }
}

}  // namespace mxjit::cache::detail
