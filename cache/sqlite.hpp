#pragma once
/// \file A thin RAII layer over the SQLite C API for the disk cache: a connection with cached
/// statements, typed errors carrying the result code, and bounded write transactions.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dsl/errors.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace mxjit::cache::detail {

/// An SQLite call failed. code() is the primary result code (SQLITE_BUSY, SQLITE_CORRUPT, ...).
class SqliteError : public Error {
 public:
  /// `what` already names the call and SQLite's message.
  SqliteError(std::string what, int code) : Error(std::move(what)), code_(code) {}
  /// Primary SQLite result code.
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// True when the result code means the file is not a (sound) database: corrupt or not SQLite.
bool is_corruption(int code) noexcept;
/// True when the result code means another connection holds a lock.
bool is_busy(int code) noexcept;

/// True when this SQLite version (as sqlite3_libversion_number()) has the WAL-reset corruption
/// fix: >= 3.51.3, or the 3.44.6 and 3.50.7 backports.
bool wal_is_safe(int version) noexcept;
/// sqlite3_libversion_number() of the linked SQLite.
int sqlite_version_number() noexcept;
/// sqlite3_libversion() of the linked SQLite, e.g. "3.40.1".
std::string_view sqlite_version_text() noexcept;

/// One use of a prepared statement: binds, steps, reads columns; resets the statement (and so
/// releases its read lock) when destroyed.
class Query {
 public:
  /// Wraps a statement owned by a Connection.
  Query(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  /// Binds text to the 1-based parameter `i`.
  Query& bind(int i, std::string_view text);
  /// Binds a blob to the 1-based parameter `i`.
  Query& bind_blob(int i, std::string_view bytes);
  /// Binds an integer to the 1-based parameter `i`.
  Query& bind(int i, int64_t v);
  /// Binds a real to the 1-based parameter `i`.
  Query& bind(int i, double v);
  /// Advances: true when a row is available, false when done. Throws SqliteError.
  bool step();
  /// Steps until done (for statements returning no rows).
  void run();

  /// Column `c` of the current row as text ("" for NULL).
  std::string text(int c) const;
  /// Column `c` of the current row as bytes ("" for NULL).
  std::string blob(int c) const;
  /// Column `c` of the current row as an integer.
  int64_t int64(int c) const;
  /// Column `c` of the current row as a real.
  double real(int c) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

/// An open SQLite connection. Not thread-safe: the owner serializes calls.
class Connection {
 public:
  /// Opens an existing file read-write (SQLite creates nothing). Throws SqliteError.
  explicit Connection(const std::filesystem::path& file);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  /// Closes the connection unless release() was called.
  ~Connection();

  /// Runs one or more statements that return no rows of interest. Throws SqliteError.
  void exec(std::string_view sql);
  /// Prepares `sql` once per connection and returns a fresh use of it.
  Query query(const std::string& sql);
  /// Reads an integer pragma, e.g. pragma_int("user_version").
  int64_t pragma_int(std::string_view name);
  /// Reads a text pragma, e.g. pragma_text("journal_mode").
  std::string pragma_text(std::string_view name);
  /// How long SQLite itself waits on a lock before returning SQLITE_BUSY.
  void set_busy_timeout(std::chrono::milliseconds timeout);
  /// Rows changed by the last write statement.
  int64_t changes() const;
  /// True while an explicit transaction is open.
  bool in_transaction() const;
  /// Rolls back an open transaction, ignoring errors.
  void rollback_quietly() noexcept;

  /// Forgets the connection without closing it: after fork() the child must not touch the
  /// parent's connection at all, not even to close it (SQLite's documented advice).
  void release() noexcept;

 private:
  [[noreturn]] void fail(std::string_view what, int rc) const;
  static int on_busy(void* self, int count);

  sqlite3* db_ = nullptr;
  std::chrono::milliseconds busy_timeout_{0};
  std::chrono::steady_clock::time_point busy_since_;
  std::minstd_rand jitter_;
  std::unordered_map<std::string, sqlite3_stmt*> stmts_;
};

/// BEGIN IMMEDIATE, retried with backoff while the database is busy, for at most `give_up`.
/// Returns false when still busy at the deadline; throws SqliteError on other errors.
bool begin_immediate(Connection& db, std::chrono::milliseconds give_up);

/// Rolls back on destruction unless commit() succeeded.
class WriteTxn {
 public:
  /// Takes an already-begun transaction on `db`.
  explicit WriteTxn(Connection& db) : db_(db) {}
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  ~WriteTxn() {
    if (!done_) db_.rollback_quietly();
  }
  /// COMMIT. Throws SqliteError (the destructor then rolls back what is left).
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

 private:
  Connection& db_;
  bool done_ = false;
};

}  // namespace mxjit::cache::detail
