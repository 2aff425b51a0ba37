#include "runtime/compile.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cache/key.hpp"
#include "runtime/bindings.hpp"
#include "runtime/nvrtc.hpp"
#include "templates/templates.hpp"

namespace mxjit::detail {
namespace {

namespace fs = std::filesystem;

// The folder an environment variable names, or empty when it is unset, empty or "0".
fs::path env_dir(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v || std::string_view(v) == "0") return {};
  return fs::path(v);
}

// One warning line on stderr per distinct message (dump and override problems must not stop a cast).
void warn_once(const std::string& msg) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard lock(m);
  if (said.insert(msg).second) std::fprintf(stderr, "mxjit: warning: %s\n", msg.c_str());
}

void note_once(const std::string& msg) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard lock(m);
  if (said.insert(msg).second) std::fprintf(stderr, "mxjit: note: %s\n", msg.c_str());
}

void write_file(const fs::path& file, const std::string& bytes, const char* var) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (out) out.write(bytes.data(), std::streamsize(bytes.size()));
  if (ec || !out) warn_once(fmt::format("{}: could not write {}{}{}", var, file.string(), ec ? ": " : "", ec ? ec.message() : ""));
}

// MXJIT_OVERRIDE_DIR: <dir>/<file_name> replaces the generated source where it exists.
std::optional<std::string> override_source(const std::string& file_name) {
  const fs::path dir = env_dir("MXJIT_OVERRIDE_DIR");
  if (dir.empty()) return std::nullopt;
  const fs::path file = dir / file_name;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    warn_once(fmt::format("MXJIT_OVERRIDE_DIR: could not read {}; compiling the generated source", file.string()));
    return std::nullopt;
  }
  note_once(fmt::format("MXJIT_OVERRIDE_DIR: {} replaces the generated kernel", file.string()));
  return text.str();
}

}  // namespace

cache::DiskCache& disk_cache() {
  static std::unique_ptr<cache::DiskCache> instance = cache::DiskCache::open_default();
  return *instance;
}

std::string nvrtc_options_text(const std::string& arch) {
  return fmt::format("{}", fmt::join(nvrtc_base_options(arch), " "));
}

std::vector<std::string> plan_nvrtc_options(const Plan& plan) {
  const size_t n = plan.entry_names().size();
  if (n < 2) return {};
  for (const std::string& o : env_nvrtc_options())
    if (o.find("split-compile") != std::string::npos) return {};
  // The token groups' two-kernel module: about 27% less cold compile (docs/perf-log.md#split-compile).
  return {fmt::format("--split-compile={}", n)};
}

StrideClass default_stride_class(const Pipeline& p) {
  StrideClass sc;
  for (const InputDecl& in : p.inputs()) {
    sc.unit_axis.push_back(in.one_dim() ? 0 : in.rank - 1);
    sc.aligned.push_back(in.kind == InputDecl::Kind::tensor || in.kind == InputDecl::Kind::codes);  // codes: chunk loads (dequantize)
  }
  return sc;
}

StrideClass contiguous_stride_class(const Pipeline& p, const std::vector<int64_t>& shape) {
  StrideClass sc = default_stride_class(p);
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& in = p.inputs()[k];
    if (in.kind != InputDecl::Kind::tensor || shape.size() != size_t(in.rank)) continue;
    std::vector<int64_t> strides(shape.size(), 1);  // row-major, 16-byte aligned base
    for (size_t a = shape.size(); a-- > 1;) strides[a - 1] = strides[a] * shape[a];
    const ViewClass c = view_class(shape, strides, in.dtype);  // as a launch decides
    sc.unit_axis[k] = c.unit;
    sc.aligned[k] = c.strides_aligned;
  }
  return sc;
}

std::vector<NvrtcHeader> kernel_header_texts(const std::vector<std::string>& names) {
  std::vector<NvrtcHeader> h;
  for (const std::string& n : names) h.push_back({n, std::string(template_text(n))});
  return h;
}

CompiledKernel compile(const Pipeline& p, const Target& target, const StrideClass& sc, const CompileOptions& options) {
  GeneratedKernel g = generate(p, target, sc, options.schedule, options.fit);
  CompiledKernel k;
  k.source = std::move(g.source);
  k.plan = g.plan;
  if (std::optional<std::string> o = override_source(g.file_name)) {
    k.source = std::move(*o);
    k.overridden = true;
  }
  const std::vector<NvrtcHeader> headers = kernel_header_texts(g.headers);
  cache::KeyParts parts;
  parts.generator_version = kGeneratorVersion;
  parts.source = k.source;
  for (const NvrtcHeader& h : headers) parts.headers += h.name + '\0' + h.text + '\0';
  const std::vector<std::string> plan_options = plan_nvrtc_options(k.plan);
  parts.options = nvrtc_options_text(target.arch);
  for (const std::string& o : plan_options) parts.options += " " + o;
  parts.arch = target.arch;
  parts.toolchain_version = nvrtc_version_string();
  k.content_key = cache::content_key(parts);
  const fs::path dump = env_dir("MXJIT_DUMP_DIR");
  // A dump needs NVRTC's PTX, which the disk cache does not keep: those compiles skip the lookup.
  const bool cacheable = !options.want_ptx && !options.resource_usage && dump.empty();
  cache::DiskCache& disk = disk_cache();
  // The plan is the generated one: the key covers the source, which the plan shaped.
  auto take_hit = [&](cache::CacheEntry& hit) {
    k.cubin = std::move(hit.blob);
    k.from_disk = true;
  };
  std::unique_ptr<cache::KeyLock> claim;
  if (cacheable) {
    if (auto hit = disk.get(k.content_key)) {
      take_hit(*hit);
      return k;
    }
    // A miss: claim the key across processes, so that ranks starting together compile it once.
    claim = disk.lock_key(k.content_key);
    if (claim) {
      if (auto hit = disk.get(k.content_key)) {
        take_hit(*hit);
        return k;
      }
    }
  }
  NvrtcRequest req;
  req.source = k.source;
  req.headers = headers;
  req.file_name = g.file_name;
  req.arch = target.arch;
  req.extra_options = plan_options;
  req.want_ptx = options.want_ptx || !dump.empty();
  req.resource_usage = options.resource_usage;
  NvrtcOutput out = nvrtc_compile(req);
  k.cubin = std::move(out.cubin);
  k.ptx = std::move(out.ptx);
  k.log = std::move(out.log);
  k.compile_ms = out.compile_ms;
  if (!dump.empty()) {
    const std::string stem = g.plan.kernel_name;
    write_file(dump / (stem + ".cu"), k.source, "MXJIT_DUMP_DIR");
    write_file(dump / (stem + ".ptx"), k.ptx, "MXJIT_DUMP_DIR");
    write_file(dump / (stem + ".cubin"), k.cubin, "MXJIT_DUMP_DIR");
    write_file(dump / (stem + ".plan.txt"),
               fmt::format("kernel {}\ntarget {}\nstride class {}\ncontent key {}\n{}\n", stem, target.arch, sc.str(),
                           k.content_key.hex(), k.plan.str()),
               "MXJIT_DUMP_DIR");
  }
  if (!options.resource_usage) {
    cache::CacheEntry e;
    e.key = k.content_key;
    e.kernel_name = k.plan.kernel_name;
    e.arch = target.arch;
    e.toolchain_version = parts.toolchain_version;
    e.blob = k.cubin;
    e.meta = k.plan.str();
    e.compile_ms = k.compile_ms;
    disk.put(e);
  }
  return k;
}

std::vector<CompiledKernel> compile_all(const std::vector<WarmupItem>& items, const Target& target, int threads) {
  std::vector<CompiledKernel> out(items.size());
  std::vector<std::exception_ptr> errors(items.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      try {
        CompileOptions o;
        o.schedule = items[i].schedule;
        out[i] = compile(items[i].pipeline, target, items[i].stride_class, o);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t n = std::min<size_t>(items.size(), threads > 0 ? size_t(threads) : std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

void evict(const Hash128& content_key) { disk_cache().remove(content_key); }

}  // namespace mxjit::detail
