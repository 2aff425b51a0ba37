#pragma once
/// \file The cache file on disk: where it may live (a private directory, a trusted file), how it
/// is opened, recognized, initialized or migrated, and how a bad one is moved aside.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "cache/sqlite.hpp"

namespace mxjit::cache {

/// Layout version of the tables, stored as `PRAGMA user_version`.
constexpr int kSchemaVersion = 1;
/// `PRAGMA application_id` of an mxjit cache file ("MXJC"), so foreign SQLite files are told apart.
constexpr int32_t kApplicationId = 0x4d584a43;

}  // namespace mxjit::cache

namespace mxjit::cache::detail {

/// Identity of a file (device, inode): tells "the file I opened" from "a file now at that path".
struct FileId {
  uint64_t dev = 0, ino = 0;
  /// Same device and inode.
  friend bool operator==(const FileId&, const FileId&) = default;
};

/// Creates `dir` (and missing parents) with mode 0700 and checks it is a directory this user owns,
/// can write, and that nobody else can write. Returns why not, or "" when it is fine.
std::string prepare_private_dir(const std::filesystem::path& dir);

/// Why an existing cache file must not be trusted (other owner, group/other-writable, not a
/// regular file); "" when it is fine or does not exist.
std::string untrusted_file_reason(const std::filesystem::path& file);

/// An open, validated cache file.
struct OpenedFile {
  /// The connection, with busy timeout set and the schema current.
  std::unique_ptr<Connection> db;
  /// The file the connection is on.
  FileId id;
  /// True when the journal mode is WAL (only on an SQLite with the WAL-reset fix).
  bool wal = false;
  /// Why a previous file was rejected and rebuilt; "" when none was.
  std::string rebuilt_because;
  /// Where that file was moved; "" when another process had already moved it.
  std::string moved_to;
};

/// Open-time tuning of open_cache_file().
struct OpenOptions {
  /// SQLite's own wait on a lock before SQLITE_BUSY.
  std::chrono::milliseconds busy_timeout{10000};
  /// Total bound on waiting for the write lock (initialization, writes).
  std::chrono::milliseconds write_give_up{30000};
  /// Run `PRAGMA quick_check` at open when the file is at most this large (it reads every page).
  int64_t quick_check_max_bytes = 0;
};

/// Opens `file` (creating it with mode 0600), recognizes it, initializes or migrates the schema
/// and selects the journal mode. A corrupt, truncated, foreign or newer file, or one whose SQLite
/// header SQLite would open read-only or not at all, is moved aside to
/// `<file>.bad-<unix time>-<pid>` and replaced, once. Throws Error (or SqliteError) when the file
/// cannot be used at all; the message is the reason, phrased to follow the file name.
OpenedFile open_cache_file(const std::filesystem::path& file, const OpenOptions& options);

/// Checks `db` with `PRAGMA quick_check`; returns "" when sound, else the first problem.
std::string quick_check(Connection& db);

/// Moves `file`, with its journal and WAL, to `<file>.bad-<unix time>-<pid>` if the path still
/// names the file `expected`; returns the new name, or "" when the path names another file now
/// (another process has already replaced it). Throws Error when the rename fails.
std::string move_aside(const std::filesystem::path& file, const FileId& expected);

/// The identity of the file at `file` (not following a symlink); nullopt-like zero id if missing.
FileId file_id(const std::filesystem::path& file);

}  // namespace mxjit::cache::detail
