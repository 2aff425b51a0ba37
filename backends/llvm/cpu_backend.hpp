#pragma once
/// \file The CPU backend (optional library `mxjit_llvm`): lowers a pipeline to LLVM IR, compiles it
/// with ORC LLJIT for the host CPU (vectorised for its SIMD width) and runs it on a thread pool.
/// Bit-exact with the CPU reference (backends/reference) on every input.
///
/// ```cpp
/// using namespace mxjit;
/// cpu::CpuKernel k = cpu::cpu_jit(p);        // compiles (or loads from the SQLite cache)
/// k({x_view}, {q_view, s_view});             // host views shaped as output_geometry(...)
/// ```
/// Compiled code is cached in process (pipeline hash + stride class) and on disk beside the
/// cubins (arch "host-<cpu>-<features hash>", toolchain "llvm-16.x"): a new process that finds
/// the object file in SQLite links it without optimising again.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "dsl/pipeline.hpp"
#include "runtime/tensor.hpp"

namespace mxjit::cpu {

/// True when LLVM could be initialised for the host CPU (the backend can compile and run).
bool cpu_backend_available();

/// Why cpu_backend_available() is false ("" when it is true).
std::string cpu_backend_unavailable_reason();

/// The host target the backend compiles for, e.g. "host-znver3-1a2b3c4d" (the cache's arch).
std::string cpu_target_name();

struct CpuKernelState;

/// What the last compile of a kernel did (for measurements and tests).
struct CpuCompileInfo {
  bool from_disk = false;   ///< the object file came from the SQLite cache (no optimisation)
  double total_ms = 0;      ///< wall time of the lookup: lower + (optimise + codegen | load) + link
  double lower_ms = 0;      ///< building the LLVM IR
  double compile_ms = 0;    ///< O3 + machine code (0 on a disk hit)
  std::string content_key;  ///< the SQLite key (hex)
  uintptr_t fn_address = 0; ///< where the compiled tile function was linked (for profilers)
};

/// A pipeline compiled for the host CPU; cheap to copy (shared state).
class CpuKernel {
 public:
  /// Runs the pipeline. `in` follow p.inputs(), `out` p.outputs() (host views shaped as
  /// output_geometry(p, i, domain, groups)); `threads` = 0 uses every core. Throws UsageError
  /// for bad bindings (same checks as the reference and the GPU launcher) and for pipeline
  /// features this backend does not lower (naming them); compiles on the first call with a new
  /// stride class.
  void operator()(std::span<const TensorView> in, std::span<const TensorView> out, int threads = 0) const;
  /// The pipeline.
  const Pipeline& pipeline() const;
  /// What compiling the default (contiguous) stride class did in cpu_jit().
  const CpuCompileInfo& compile_info() const;
  /// The LLVM IR (before optimisation) of the default stride class, for inspection.
  std::string ir_text() const;

 private:
  friend CpuKernel cpu_jit(const Pipeline& p);
  std::shared_ptr<CpuKernelState> state_;
};

/// Compiles `p` for the host CPU (contiguous inputs; other stride classes compile on first use).
/// Throws UsageError when a pipeline feature is not lowered (naming it) or the backend is
/// unavailable, Error when LLVM fails.
CpuKernel cpu_jit(const Pipeline& p);

}  // namespace mxjit::cpu
