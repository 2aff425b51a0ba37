#pragma once
/// \file The compile pipeline, explicit as in jitify2: generate -> content key -> SQLite lookup
/// -> NVRTC on a miss -> store. Needs no GPU; loading is runtime/kernel.cpp's business.
#include <memory>
#include <string>

#include "cache/disk_cache.hpp"
#include "codegen/emit.hpp"

namespace mxjit::detail {

/// The result of compiling one specialised kernel.
struct CompiledKernel {
  std::string source;       ///< the generated CUDA C++
  std::string cubin;        ///< ELF bytes for plan's arch
  std::string ptx;          ///< PTX (only when asked for)
  std::string log;          ///< NVRTC log (ptxas -v report when asked for)
  Plan plan;                ///< launch description
  Hash128 content_key;      ///< the SQLite key
  bool from_disk = false;   ///< true when the cubin came from the SQLite cache
  double compile_ms = 0;    ///< NVRTC time (0 on a disk hit)
};

/// Options of one compile.
struct CompileOptions {
  bool want_ptx = false;        ///< also produce PTX (forces an NVRTC compile; not cached)
  bool resource_usage = false;  ///< ptxas -v report in the log (forces an NVRTC compile)
  Schedule schedule;            ///< the schedule (unset fields: defaults)
  Fit fit = Fit::exact;         ///< how strictly the schedule must apply (make_plan)
};

/// The process-wide disk cache (opened on first use from the environment; never null).
cache::DiskCache& disk_cache();

/// NVRTC options every mxjit compile uses beyond the wrapper's own.
std::string nvrtc_options_text(const std::string& arch);

/// Compiles `p` for `target` and stride class `sc`, through the disk cache.
/// Throws UsageError (pipeline unsupported on GPU) or CompileError.
CompiledKernel compile(const Pipeline& p, const Target& target, const StrideClass& sc,
                       const CompileOptions& options = {});

/// Forgets a disk entry whose cubin failed to load, so the next compile replaces it.
void evict(const Hash128& content_key);

/// The stride class of a contiguous, 16-byte aligned binding of `p` (what jit() compiles eagerly).
StrideClass default_stride_class(const Pipeline& p);

}  // namespace mxjit::detail
