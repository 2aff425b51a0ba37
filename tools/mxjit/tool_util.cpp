#include "tools/mxjit/tool_util.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit::tool {

void print_error(std::string_view message) {
  std::string text = "mxjit: error: ";
  text += message;
  if (text.empty() || text.back() != '\n') text += '\n';
  std::fputs(text.c_str(), stderr);
}

void print_notice(std::string_view message) {
  std::string text = "mxjit: note: ";
  for (char c : message) {
    const auto u = static_cast<unsigned char>(c);
    text += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  text += '\n';
  std::fputs(text.c_str(), stderr);
}

namespace {

/// Writes all of `bytes` to `fd`; the errno of the first failure, or 0.
int write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno != EINTR) return errno;
    if (n > 0) done += size_t(n);
  }
  return 0;
}

}  // namespace

void write_output_file(const std::filesystem::path& path, std::string_view bytes, std::string_view what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target = fs::is_symlink(path, ec) ? fs::weakly_canonical(path, ec) : path;
  const fs::file_status st = fs::status(target, ec);
  if (fs::is_directory(st)) throw UsageError(fmt::format("{}: is a directory, not a file", what));
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // Nothing to replace: write in place (non-blocking open: a FIFO without a reader is an error).
    const int fd = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw UsageError(fmt::format("{}: cannot open it for writing: {}", what, std::strerror(errno)));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int err = write_all(fd, bytes);
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err != 0) throw Error(fmt::format("{}: write failed: {}", what, std::strerror(err)));
    return;
  }
  if (target.filename().empty()) throw UsageError(fmt::format("{}: names a directory, not a file", what));
  StagedFiles files(target.parent_path());
  files.add(target.filename().string(), bytes, what);
  files.commit();
}

StagedFiles::StagedFiles(std::filesystem::path dir) : dir_(dir.empty() ? std::filesystem::path(".") : std::move(dir)) {}

StagedFiles::~StagedFiles() {
  for (const auto& [temp, name] : staged_) ::unlink(temp.c_str());
}

void StagedFiles::add(const std::string& name, std::string_view bytes, std::string_view what) {
  // A name of this process's own (O_EXCL), created with the mode (and umask) of a plain create.
  static unsigned counter = 0;
  std::string temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    temp = (dir_ / fmt::format(".{}.mxjit-{}-{}", name, ::getpid(), counter++)).string();
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw UsageError(fmt::format("{}: cannot create a file in '{}': {}", what, dir_.string(), std::strerror(errno)));
  staged_.emplace_back(temp, name);
  int err = write_all(fd, bytes);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0)
    throw Error(fmt::format("{}: cannot write '{}': {} (nothing was written)", what, path(name).string(), std::strerror(err)));
}

void StagedFiles::commit() {
  // Concurrent commits into one directory take turns, so one cast's files are never mixed with another's.
  const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) ::flock(dfd, LOCK_EX);
  std::string failed;
  for (const auto& [temp, name] : staged_)
    if (failed.empty() && std::rename(temp.c_str(), path(name).c_str()) != 0)
      failed = fmt::format("cannot rename '{}' to '{}': {}", temp, path(name).string(), std::strerror(errno));
  if (dfd >= 0) ::close(dfd);  // releases the lock
  if (!failed.empty()) throw Error(failed);
  staged_.clear();
}

}  // namespace mxjit::tool
