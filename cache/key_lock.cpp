// Cross-process compile claims (DiskCache::lock_key): flock on striped lock files beside the
// SQLite file. Stripes keep the directory at 256 files that are never deleted (deleting a lock
// file while another process waits on it would let a third process lock a new inode beside it).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "cache/disk_cache.hpp"

namespace mxjit::cache {

KeyLock::~KeyLock() {
  if (fd_ >= 0) {
    flock(fd_, LOCK_UN);
    close(fd_);
  }
}

std::unique_ptr<KeyLock> DiskCache::lock_key(const Hash128& key) {
  std::filesystem::path dir;
  {
    std::lock_guard lock(mu_);
    if (!enabled_) return nullptr;
    dir = dir_ / "locks";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return nullptr;
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);  // private, as the cache dir
  const std::string name = key.hex().substr(0, 2) + ".lock";
  const int fd = open((dir / name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  int r;
  do r = flock(fd, LOCK_EX);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    close(fd);
    return nullptr;
  }
  return std::make_unique<KeyLock>(fd);
}

}  // namespace mxjit::cache
