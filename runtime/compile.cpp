#include "runtime/compile.hpp"

#include <mutex>

#include "cache/key.hpp"
#include "runtime/nvrtc.hpp"

namespace mxjit::detail {

cache::DiskCache& disk_cache() {
  static std::unique_ptr<cache::DiskCache> instance = cache::DiskCache::open_default();
  return *instance;
}

std::string nvrtc_options_text(const std::string& arch) {
  // The wrapper adds --std=c++17 --gpu-architecture=<arch> -default-device --minimal --fmad=false.
  return "--std=c++17 --gpu-architecture=" + arch + " -default-device --minimal --fmad=false";
}

StrideClass default_stride_class(const Pipeline& p) {
  StrideClass sc;
  for (const InputDecl& in : p.inputs()) {
    sc.unit_axis.push_back(in.kind == InputDecl::vector || in.kind == InputDecl::offsets ? 0 : in.rank - 1);
    sc.aligned.push_back(in.kind == InputDecl::tensor || in.kind == InputDecl::codes);  // codes: chunk loads (dequantize)
  }
  return sc;
}

CompiledKernel compile(const Pipeline& p, const Target& target, const StrideClass& sc, const CompileOptions& options) {
  GeneratedKernel g = generate(p, target, sc, options.schedule, options.fit);
  CompiledKernel k;
  k.source = std::move(g.source);
  k.plan = g.plan;
  cache::KeyParts parts;
  parts.generator_version = kGeneratorVersion;
  parts.source = k.source;
  parts.options = nvrtc_options_text(target.arch);
  parts.arch = target.arch;
  parts.toolchain_version = nvrtc_version_string();
  k.content_key = cache::content_key(parts);
  const bool cacheable = !options.want_ptx && !options.resource_usage;
  cache::DiskCache& disk = disk_cache();
  if (cacheable) {
    if (auto hit = disk.get(k.content_key)) {
      // The plan is the generated one: the key covers the source, which the plan shaped.
      k.cubin = std::move(hit->blob);
      k.from_disk = true;
      return k;
    }
  }
  NvrtcRequest req;
  req.source = k.source;
  req.file_name = g.file_name;
  req.arch = target.arch;
  req.want_ptx = options.want_ptx;
  req.resource_usage = options.resource_usage;
  NvrtcOutput out = nvrtc_compile(req);
  k.cubin = std::move(out.cubin);
  k.ptx = std::move(out.ptx);
  k.log = std::move(out.log);
  k.compile_ms = out.compile_ms;
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

void evict(const Hash128& content_key) { disk_cache().remove(content_key); }

}  // namespace mxjit::detail
