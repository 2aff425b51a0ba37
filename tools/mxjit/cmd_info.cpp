// `mxjit info`: the GPUs and their arch (or why there is none), the driver, NVRTC and SQLite
// versions, and where the kernel cache lives.
#include <memory>

#include <cstdlib>

#include <fmt/format.h>

#include "cache/disk_cache.hpp"
#include "cache/sqlite.hpp"
#include "dsl/errors.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/nvrtc.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

/// "13.0" from 13000.
std::string driver_text(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

void print_gpus() {
  if (!gpu_available()) {
    fmt::print("gpu:          no GPU: {}\n", gpu_unavailable_reason());
    fmt::print("driver:       -\n");
    return;
  }
  int driver = 0;
  for (int i = 0;; ++i) {
    GpuInfo g;
    try {
      g = gpu_info(i);
    } catch (const UsageError&) {
      break;  // past the last ordinal
    }
    driver = g.driver_version;
    fmt::print("gpu {}:        {} (cc {}.{}, arch {}), {} SMs, {:.1f} GiB, L2 {} MiB\n", i, g.name, g.cc_major,
               g.cc_minor, nvrtc_arch(g.cc_major, g.cc_minor), g.sm_count, double(g.total_mem) / (1u << 30),
               g.l2_bytes >> 20);
  }
  fmt::print("driver:       CUDA {}\n", driver_text(driver));
}

void print_cache() {
  cache::DiskCache& c = detail::disk_cache();  // first: it warns once about an MXJIT_CACHE it does not know
  if (!c.enabled() && cache::DiskCache::disabled_by_env()) {
    fmt::print("cache:        disabled (MXJIT_CACHE={})\n", std::getenv("MXJIT_CACHE"));
    return;
  }
  if (!c.enabled()) {
    fmt::print("cache:        {} (not usable: memory only)\n", (cache::DiskCache::default_dir() / "kernels.sqlite").string());
    return;
  }
  fmt::print("cache:        {}\n", c.file().string());
  fmt::print("cache size:   {} bytes, {} entries{}\n", c.file_bytes(), c.list(false).size(), c.wal() ? " (WAL)" : "");
}

int run_info() {
  print_gpus();
  fmt::print("nvrtc:        {}\n", detail::nvrtc_version_string());
  fmt::print("sqlite:       {}\n", cache::detail::sqlite_version_text());
  print_cache();
  return kExitOk;
}

Action setup(CLI::App&) {
  return [] { return run_info(); };
}

const bool kRegistered = register_command({"info", "GPUs, driver, NVRTC and SQLite versions, the kernel cache", setup});

}  // namespace
}  // namespace mxjit::tool
