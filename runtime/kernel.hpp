#pragma once
/// \file `jit(pipeline, target)` and the Kernel it returns: checks every binding, picks (or
/// compiles) the kernel specialised for the bound views' stride class, and launches it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "codegen/schedule.hpp"
#include "codegen/target.hpp"
#include "dsl/pipeline.hpp"
#include "runtime/tensor.hpp"

namespace mxjit {

/// The exact NVRTC target of GPU `ordinal` (e.g. sm_90a on an H100). Throws CudaError without one.
Target current_target(int ordinal = 0);

/// A pipeline ready to launch on one target. Cheap to copy; thread-safe.
class Kernel {
 public:
  /// Launches on `stream` (0: the legacy default stream). `inputs` follow pipeline().inputs(),
  /// `outputs` pipeline().outputs(); every view is checked first (dtype, rank, extents, strides
  /// of the declared layout, device, null pointers, overlaps) and a mismatch throws UsageError
  /// naming the argument. Empty domains launch nothing.
  void operator()(uint64_t stream, std::span<const TensorView> inputs, std::span<const TensorView> outputs) const;
  /// Bytes of device scratch one launch needs (0 for most casts; NVFP4's tensor amax needs 4).
  size_t workspace_bytes() const;
  /// Launches with caller-provided device scratch (`workspace`: a device address of at least
  /// workspace_bytes() bytes, 16-byte aligned; 0 when workspace_bytes() is 0). No allocation happens in
  /// this call (so it can be captured in a CUDA graph).
  void operator()(uint64_t stream, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                  uint64_t workspace) const;
  /// Same, with initializer lists: `k(stream, {x}, {q, s})`.
  void operator()(uint64_t stream, std::initializer_list<TensorView> inputs,
                  std::initializer_list<TensorView> outputs) const {
    (*this)(stream, std::span<const TensorView>(inputs.begin(), inputs.size()),
            std::span<const TensorView>(outputs.begin(), outputs.size()));
  }
  /// The pipeline this kernel runs.
  const Pipeline& pipeline() const;
  /// The target it was compiled for.
  const Target& target() const;
  /// Source generated for the default (contiguous, aligned) stride class: the text that was
  /// compiled (an MXJIT_OVERRIDE_DIR file where one replaced it).
  std::string source() const;
  /// The schedule this kernel was asked for (unset fields: the planner's defaults).
  const Schedule& schedule() const;

  struct State;

 private:
  friend Kernel jit(const Pipeline& p, const Target& target, const Schedule& schedule);
  std::shared_ptr<State> state_;
};

/// Compiles (or finds in the cache) the kernel for `p` on `target` for contiguous inputs, and
/// returns a Kernel that specialises further for other stride classes on first launch. A
/// `schedule` field that does not apply to the contiguous inputs' kernel is a UsageError naming
/// it; other stride classes (whose kernel kind may differ) take the fields that apply to theirs.
/// With the default schedule, a winner the tuner stored (`mxjit explore`) is used where one exists.
Kernel jit(const Pipeline& p, const Target& target, const Schedule& schedule);
/// jit() with the default schedule.
inline Kernel jit(const Pipeline& p, const Target& target) { return jit(p, target, Schedule{}); }
/// jit() for the current GPU.
inline Kernel jit(const Pipeline& p) { return jit(p, current_target()); }

/// Compiles (or finds in the disk cache) the contiguous-input kernels of `pipelines` on `target`,
/// up to `threads` at once (0: one per hardware thread), so that the jit() calls of a job that
/// needs them all find them compiled: NVRTC runs on the CPU, one kernel per thread. Needs no GPU.
/// Throws the first compile's error (UsageError, CompileError) after every compile ended.
void warmup(const std::vector<Pipeline>& pipelines, const Target& target, int threads = 0);

}  // namespace mxjit
