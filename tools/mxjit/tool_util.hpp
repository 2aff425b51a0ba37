#pragma once
/// \file Small helpers shared by the tool's subcommands: exit statuses and message lines.
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mxjit::tool {

/// Exit status of a successful command.
inline constexpr int kExitOk = 0;
/// Exit status of a failure that is not the user's mistake (a CUDA error, a damaged cache, ...).
inline constexpr int kExitFailure = 1;
/// Exit status of a user error: bad option values, bad input files, impossible requests.
inline constexpr int kExitUsage = 2;

/// Prints `message` to stderr as `mxjit: error: <first line>`, later lines (a spec's source line
/// and caret) indented as they come.
void print_error(std::string_view message);

/// Prints one `mxjit: note: <message>` line to stderr (control characters escaped).
void print_notice(std::string_view message);

/// Writes one output file: a regular file (new or replaced) through StagedFiles; an existing
/// device or FIFO (/dev/null, /dev/stdout) in place. A symlink is followed. Throws UsageError
/// for a path that cannot be created or opened (a directory, no such directory, a FIFO without
/// a reader), Error when writing fails.
void write_output_file(const std::filesystem::path& path, std::string_view bytes, std::string_view what);

/// Output files written under temporary names in one directory and renamed into place together
/// by commit(), under an exclusive lock of the directory: a reader (or a concurrent mxjit writing
/// the same names) sees all the old files or all the new ones, never a mix and never a part of
/// one; a failed write (disk full) leaves nothing behind.
class StagedFiles {
 public:
  /// Files for directory `dir` ("" = the current directory).
  explicit StagedFiles(std::filesystem::path dir);
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  /// Removes the temporaries that were not committed.
  ~StagedFiles();
  /// Writes `bytes` to a temporary file that commit() renames to `name` in the directory; `what`
  /// names the output in messages. Throws UsageError when the file cannot be created, Error when
  /// writing fails (a full disk: not the user's mistake).
  void add(const std::string& name, std::string_view bytes, std::string_view what);
  /// Renames every file into place. Throws Error when a rename fails.
  void commit();
  /// The final path of `name`.
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
  std::vector<std::pair<std::string, std::string>> staged_;  // temporary path, final name
};

}  // namespace mxjit::tool
