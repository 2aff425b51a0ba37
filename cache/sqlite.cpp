#include "cache/sqlite.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>

namespace mxjit::cache::detail {

bool is_corruption(int code) noexcept { return code == SQLITE_CORRUPT || code == SQLITE_NOTADB; }

bool is_busy(int code) noexcept { return code == SQLITE_BUSY || code == SQLITE_LOCKED; }

bool wal_is_safe(int version) noexcept {
  return version >= 3051003 || (version >= 3044006 && version < 3045000) ||
         (version >= 3050007 && version < 3051000);
}

int sqlite_version_number() noexcept { return sqlite3_libversion_number(); }

std::string_view sqlite_version_text() noexcept { return sqlite3_libversion(); }

// ---- Query ----------------------------------------------------------------------------------

Query::~Query() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

static void check_bind(sqlite3* db, int rc) {
  if (rc != SQLITE_OK)
    throw SqliteError(fmt::format("sqlite3_bind: {}", sqlite3_errmsg(db)), rc & 0xff);
}

Query& Query::bind(int i, std::string_view text) {
  check_bind(db_, sqlite3_bind_text64(stmt_, i, text.data(), text.size(), SQLITE_TRANSIENT,
                                      SQLITE_UTF8));
  return *this;
}

Query& Query::bind_blob(int i, std::string_view bytes) {
  // A zero-length blob must still be a blob, not NULL: data() of an empty view may be null.
  static const char kEmpty = 0;
  check_bind(db_, sqlite3_bind_blob64(stmt_, i, bytes.empty() ? &kEmpty : bytes.data(),
                                      bytes.size(), SQLITE_TRANSIENT));
  return *this;
}

Query& Query::bind(int i, int64_t v) {
  check_bind(db_, sqlite3_bind_int64(stmt_, i, v));
  return *this;
}

Query& Query::bind(int i, double v) {
  check_bind(db_, sqlite3_bind_double(stmt_, i, v));
  return *this;
}

bool Query::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw SqliteError(fmt::format("sqlite3_step({}): {}", sqlite3_sql(stmt_), sqlite3_errmsg(db_)),
                    rc & 0xff);
}

void Query::run() {
  while (step()) {
  }
}

std::string Query::text(int c) const {
  const auto* p = sqlite3_column_text(stmt_, c);
  const int n = sqlite3_column_bytes(stmt_, c);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::string Query::blob(int c) const {
  const void* p = sqlite3_column_blob(stmt_, c);
  const int n = sqlite3_column_bytes(stmt_, c);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

int64_t Query::int64(int c) const { return sqlite3_column_int64(stmt_, c); }

double Query::real(int c) const { return sqlite3_column_double(stmt_, c); }

// ---- Connection -----------------------------------------------------------------------------

Connection::Connection(const std::filesystem::path& file) {
  // NOMUTEX: the owner serializes; no CREATE: the caller creates the file with mode 0600.
  const int rc = sqlite3_open_v2(file.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(fmt::format("cannot open ({})", msg), rc & 0xff);
  }
  sqlite3_extended_result_codes(db_, 1);
  jitter_.seed(static_cast<unsigned>(reinterpret_cast<uintptr_t>(this)) ^
               static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
}

Connection::~Connection() {
  if (!db_) return;
  for (auto& [sql, stmt] : stmts_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

void Connection::release() noexcept {
  stmts_.clear();
  db_ = nullptr;
}

void Connection::fail(std::string_view what, int rc) const {
  throw SqliteError(fmt::format("{}: {}", what, sqlite3_errmsg(db_)), rc & 0xff);
}

void Connection::exec(std::string_view sql) {
  const std::string s(sql);
  const int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(s, rc);
}

Query Connection::query(const std::string& sql) {
  auto it = stmts_.find(sql);
  if (it == stmts_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) fail(sql, rc);
    it = stmts_.emplace(sql, stmt).first;
  }
  return Query(db_, it->second);
}

int64_t Connection::pragma_int(std::string_view name) {
  Query q = query(fmt::format("PRAGMA {}", name));
  return q.step() ? q.int64(0) : 0;
}

std::string Connection::pragma_text(std::string_view name) {
  Query q = query(fmt::format("PRAGMA {}", name));
  return q.step() ? q.text(0) : std::string();
}

// SQLite's default handler backs off to 100 ms sleeps, which starves a waiter behind the short
// transactions of a cache shared by many ranks; short jittered sleeps keep the queue moving.
int Connection::on_busy(void* self, int count) {
  auto* c = static_cast<Connection*>(self);
  const auto now = std::chrono::steady_clock::now();
  if (count == 0) c->busy_since_ = now;
  if (now - c->busy_since_ >= c->busy_timeout_) return 0;
  const auto step = std::chrono::microseconds(500 * std::min(count + 1, 8));
  std::this_thread::sleep_for(step + std::chrono::microseconds(c->jitter_() % 500));
  return 1;
}

void Connection::set_busy_timeout(std::chrono::milliseconds timeout) {
  busy_timeout_ = timeout;
  if (timeout.count() <= 0) sqlite3_busy_handler(db_, nullptr, nullptr);
  else sqlite3_busy_handler(db_, &Connection::on_busy, this);
}

int64_t Connection::changes() const { return sqlite3_changes64(db_); }

bool Connection::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

void Connection::rollback_quietly() noexcept {
  if (db_ && in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

bool begin_immediate(Connection& db, std::chrono::milliseconds give_up) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + give_up;
  auto backoff = std::chrono::milliseconds(1);
  for (;;) {
    try {
      db.exec("BEGIN IMMEDIATE");
      return true;
    } catch (const SqliteError& e) {
      if (!is_busy(e.code())) throw;
    }
    // SQLite's own busy handler already waited busy_timeout; this outer loop bounds the total
    // and covers the cases where SQLite returns SQLITE_BUSY without calling the handler.
    if (Clock::now() + backoff >= deadline) return false;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
}

}  // namespace mxjit::cache::detail
