// `mxjit cache ls|stats|verify|clear|dump`: the maintenance side of the SQLite kernel cache.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <optional>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cache/disk_cache.hpp"
#include "cache/key.hpp"
#include "dsl/errors.hpp"
#include "runtime/compile.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

struct CacheCommand {
  CLI::App* ls = nullptr;
  CLI::App* stats = nullptr;
  CLI::App* verify = nullptr;
  CLI::App* clear = nullptr;
  CLI::App* dump = nullptr;
  bool remove_bad = false;
  std::string key;
  std::string out;
};

/// Why the process's disk cache is memory-only, for messages ("" when it is usable).
std::string unusable(const cache::DiskCache& c) {
  if (c.enabled()) return "";
  if (cache::DiskCache::disabled_by_env())
    return fmt::format("the disk cache is disabled (MXJIT_CACHE={})", std::getenv("MXJIT_CACHE"));
  return "the disk cache is not usable (see the warning above)";
}

std::string when(int64_t unix_time) {
  if (unix_time <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int run_ls(cache::DiskCache& c) {
  const auto entries = c.list(false);
  fmt::print("{:<32}  {:<8}  {:<6}  {:>9}  {:>10}  {:<16}  {}\n", "key", "arch", "nvrtc", "bytes", "compile ms",
             "last used", "kernel");
  for (const cache::CacheEntry& e : entries)
    fmt::print("{:<32}  {:<8}  {:<6}  {:>9}  {:>10.1f}  {:<16}  {}\n", e.key.hex(), e.arch, e.toolchain_version,
               e.blob_bytes, e.compile_ms, when(e.last_used_unix), e.kernel_name);
  fmt::print("{} entr{}\n", entries.size(), entries.size() == 1 ? "y" : "ies");
  return kExitOk;
}

int run_stats(cache::DiskCache& c) {
  const auto entries = c.list(false);
  int64_t bytes = 0;
  double ms = 0;
  std::vector<std::string> arches;
  for (const cache::CacheEntry& e : entries) {
    bytes += e.blob_bytes;
    ms += e.compile_ms;
    if (std::find(arches.begin(), arches.end(), e.arch) == arches.end()) arches.push_back(e.arch);
  }
  fmt::print("file:            {}\n", c.enabled() ? c.file().string() : std::string("(none: memory only)"));
  fmt::print("file size:       {} bytes{}\n", c.file_bytes(), c.wal() ? " (WAL)" : "");
  fmt::print("entries:         {}\n", entries.size());
  fmt::print("cubin bytes:     {}\n", bytes);
  fmt::print("arches:          {}\n", arches.empty() ? std::string("-") : fmt::format("{}", fmt::join(arches, " ")));
  fmt::print("compile ms kept: {:.1f} (NVRTC time a process saves when every entry hits)\n", ms);
  fmt::print("hits/misses:     counted per process, not stored in the file\n");
  return kExitOk;
}

int run_verify(cache::DiskCache& c, bool remove_bad) {
  if (!c.enabled()) {
    print_error(fmt::format("cache verify: {}; nothing was checked", unusable(c)));
    return kExitFailure;
  }
  const cache::VerifyReport r = c.verify(remove_bad);
  if (!r.rebuilt_at_open.empty()) {
    // Opening the cache found the file damaged and replaced it: that is the verdict.
    fmt::print("file damaged: {}\n", r.rebuilt_at_open);
    return kExitFailure;
  }
  if (!r.file_ok) {
    fmt::print("file damaged: {}{}\n", r.file_problem, remove_bad ? " (moved aside and rebuilt)" : "");
    return kExitFailure;
  }
  for (const std::string& k : r.bad_keys) fmt::print("bad checksum: {}{}\n", k, remove_bad ? " (removed)" : "");
  fmt::print("{} ok, {} bad\n", r.ok, r.bad);
  return r.bad == 0 ? kExitOk : kExitFailure;
}

int run_clear(cache::DiskCache& c) {
  if (!c.enabled()) {
    print_error(fmt::format("cache clear: {}; nothing was deleted", unusable(c)));
    return kExitFailure;
  }
  const size_t n = c.list(false).size();
  if (!c.clear()) {
    print_error("cache clear: nothing was deleted (see the warning above)");
    return kExitFailure;
  }
  fmt::print("cleared {} entr{} from {}\n", n, n == 1 ? "y" : "ies", c.file().string());
  return kExitOk;
}

/// A full key, or a unique prefix of one (at least 4 hex digits).
Hash128 resolve_key(cache::DiskCache& c, std::string key) {
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  if (key.size() < 4 || key.size() > 32 || !std::all_of(key.begin(), key.end(), [](unsigned char ch) {
        return std::isxdigit(ch) != 0;
      }))
    throw UsageError(fmt::format("cache key '{}' must be 4 to 32 hex digits (see `mxjit cache ls`)", key));
  if (key.size() == 32) return *cache::parse_hash128(key);
  std::vector<Hash128> found;
  for (const cache::CacheEntry& e : c.list(false))
    if (e.key.hex().starts_with(key)) found.push_back(e.key);
  if (found.empty()) throw UsageError(fmt::format("no cache entry has a key starting with '{}'", key));
  if (found.size() > 1)
    throw UsageError(fmt::format("cache key prefix '{}' is ambiguous ({} entries); give more digits", key, found.size()));
  return found[0];
}

int run_dump(cache::DiskCache& c, const std::string& key, const std::string& out) {
  const Hash128 k = resolve_key(c, key);
  const std::optional<cache::CacheEntry> e = c.get(k);  // verified (a bad entry is removed, with a warning)
  if (!e) throw UsageError(fmt::format("no valid cache entry for key {}", k.hex()));
  write_output_file(out, e->blob, fmt::format("--out '{}'", out));
  fmt::print("wrote the cubin of {} to {}\n", k.hex(), out);
  return kExitOk;
}

int run_cache(const CacheCommand& c) {
  cache::DiskCache& dc = detail::disk_cache();
  // verify and clear fail on a memory-only cache; the others show what there is, with a notice.
  if (!dc.enabled() && !c.verify->parsed() && !c.clear->parsed()) print_notice(unusable(dc));
  if (c.ls->parsed()) return run_ls(dc);
  if (c.stats->parsed()) return run_stats(dc);
  if (c.verify->parsed()) return run_verify(dc, c.remove_bad);
  if (c.clear->parsed()) return run_clear(dc);
  return run_dump(dc, c.key, c.out);
}

Action setup(CLI::App& app) {
  auto c = std::make_shared<CacheCommand>();
  app.require_subcommand(1);
  c->ls = app.add_subcommand("ls", "list the cached kernels, most recently used first");
  c->stats = app.add_subcommand("stats", "file, size, entries, compile time kept");
  c->verify = app.add_subcommand("verify", "check the file and every entry's checksum (exit 1 when damaged, or when "
                                            "the cache cannot be used)");
  c->verify->add_flag("--remove-bad", c->remove_bad, "delete bad entries (rebuild a damaged file)");
  c->clear = app.add_subcommand("clear", "delete every cached kernel (exit 1 when none could be deleted)");
  c->dump = app.add_subcommand("dump", "write one entry's cubin to a file (for cuobjdump)");
  c->dump->add_option("key", c->key, "the entry's key, or a unique prefix of it")->required();
  c->dump->add_option("--out", c->out, "file to write")->required();
  return [c] { return run_cache(*c); };
}

const bool kRegistered = register_command({"cache", "inspect and maintain the SQLite kernel cache", setup});

}  // namespace
}  // namespace mxjit::tool
