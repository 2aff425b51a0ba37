#pragma once
/// \file The compile pipeline, explicit as in jitify2: generate -> [override] -> content key ->
/// SQLite lookup -> NVRTC on a miss -> [dump] -> store. Needs no GPU; loading is
/// runtime/kernel.cpp's business.
///
/// Environment (read on every compile):
///   MXJIT_DUMP_DIR=<dir>       writes <dir>/<kernel>.cu, .ptx, .cubin and .plan.txt for every
///                              kernel compiled (these compiles skip the disk-cache lookup: the
///                              PTX is not cached)
///   MXJIT_OVERRIDE_DIR=<dir>   where <dir>/<kernel>.cu exists (a dumped file, hand-edited), it is
///                              compiled in place of the generated source (its own cache key; one
///                              note on stderr per file)
///   MXJIT_DUMP_SOURCE=<dir>|1  writes only the source NVRTC compiles (runtime/nvrtc.hpp)
///   MXJIT_NVRTC_OPTIONS="..."  NVRTC options appended to mxjit's own (part of the cache key;
///                              env_nvrtc_options)
#include <memory>
#include <string>

#include "cache/disk_cache.hpp"
#include "codegen/emit.hpp"
#include "runtime/nvrtc.hpp"

namespace mxjit::detail {

/// The result of compiling one specialised kernel.
struct CompiledKernel {
  std::string source;       ///< the CUDA C++ compiled (generated, or the MXJIT_OVERRIDE_DIR file)
  bool overridden = false;  ///< true when an MXJIT_OVERRIDE_DIR file replaced the generated source
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

/// nvrtc_base_options(arch) as one line, the options part of every cache key.
std::string nvrtc_options_text(const std::string& arch);

/// The options a plan adds to nvrtc_base_options (and to its cache key): for a module of several
/// kernels, --split-compile=N, which runs NVVM's optimizations of its N kernels in parallel (one
/// kernel's compile would only pay for the threads); none where MXJIT_NVRTC_OPTIONS sets it.
std::vector<std::string> plan_nvrtc_options(const Plan& plan);

/// Compiles `p` for `target` and stride class `sc`, through the disk cache.
/// Throws UsageError (pipeline unsupported on GPU) or CompileError.
CompiledKernel compile(const Pipeline& p, const Target& target, const StrideClass& sc,
                       const CompileOptions& options = {});

/// The texts of mxjit's headers `names` (templates/), as NVRTC gets them.
std::vector<NvrtcHeader> kernel_header_texts(const std::vector<std::string>& names);

/// One kernel a job will need: a pipeline, the stride class of its bindings and a schedule.
struct WarmupItem {
  Pipeline pipeline;
  StrideClass stride_class;
  Schedule schedule = {};
};

/// Compiles every item for `target` (through the disk cache, as compile() does), on up to
/// `threads` threads at once (0: one per hardware thread): NVRTC runs on the CPU, one kernel per
/// thread, so a job's variants cost about the slowest one's time rather than their sum. Returns
/// the results in the order of `items`; the first failure is rethrown after every compile ended.
std::vector<CompiledKernel> compile_all(const std::vector<WarmupItem>& items, const Target& target, int threads = 0);

/// Forgets a disk entry whose cubin failed to load, so the next compile replaces it.
void evict(const Hash128& content_key);

/// The stride class of a contiguous, 16-byte aligned binding of `p` (what jit() compiles eagerly).
StrideClass default_stride_class(const Pipeline& p);
/// The stride class of row-major (contiguous, 16-byte aligned) input tensors of `shape`, decided
/// as a launch decides it (view_class): rows whose bytes are not a multiple of 16 are not aligned,
/// and the unit-stride axis skips trailing axes of extent 1 (`mxjit explore` sweeps and stores
/// under it).
StrideClass contiguous_stride_class(const Pipeline& p, const std::vector<int64_t>& shape);

}  // namespace mxjit::detail
