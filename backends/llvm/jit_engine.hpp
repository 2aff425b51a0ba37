#pragma once
/// \file The process-wide ORC LLJIT for the host CPU: lowers a pipeline (lower.hpp), optimises it
/// at O3 for the host TargetMachine, emits an object file, keeps it in the SQLite cache beside
/// the cubins and links it into the JIT. Compiled functions are cached in process by
/// (pipeline hash, stride class); a disk hit links the cached object without optimising.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/llvm/cpu_backend.hpp"
#include "backends/llvm/cpu_plan.hpp"

namespace mxjit::cpu::detail {

/// One compiled tile function with the plan it was built for.
struct CompiledFunction {
  using Fn = void (*)(const int64_t* params, const int64_t* tile, char* scratch);
  Fn fn = nullptr;
  CpuPlan plan;
  CpuCompileInfo info;
  std::string ir_text;  ///< the IR before optimisation (the cache key's source)
};

/// The tile function of `p` for inputs whose stride-1 axes are `unit_axis` (thread-safe).
/// `memory_cache` false skips the in-process cache (tests of the disk path). Throws UsageError
/// (not lowered / backend unavailable) or Error (LLVM failed).
std::shared_ptr<const CompiledFunction> compile_function(const Pipeline& p, const std::vector<int>& unit_axis,
                                                        bool memory_cache = true);

/// True when the JIT could be created for the host; `reason` says why not.
bool engine_available(std::string* reason);

/// "host-<cpu>-<8 hex of the feature string>".
std::string host_target_name();

/// The generator version of the CPU lowering (part of every cache key).
inline constexpr const char* kCpuGeneratorVersion = "mxjit-cpu-2";

}  // namespace mxjit::cpu::detail
