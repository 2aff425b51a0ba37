#pragma once
/// \file What Kernel::prepare hands to make_prepared (runtime/prepared.cpp): the checked views, what
/// the checks found, the plan and its launch, the kernel loaded in the current context.
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "codegen/plan.hpp"
#include "runtime/bindings.hpp"
#include "runtime/module.hpp"
#include "runtime/prepared.hpp"

namespace mxjit::detail {

/// The parts of one prepared launch; pointers are borrowed for the call of make_prepared, except
/// what `owner` and `loaded` keep alive.
struct PreparedParts {
  const Pipeline* pipeline = nullptr;           ///< owned by `owner`; rechecks the views on a bad pointer
  std::span<const TensorView> inputs, outputs;  ///< the views check_bindings passed
  const Binding* binding = nullptr;             ///< what it found
  const Plan* plan = nullptr;                   ///< the plan of the kernel for their stride class
  Launch launch;                                ///< its launch on the domain (persistent grid: uncapped)
  const LoadedKernel* kernel = nullptr;         ///< owned by `loaded`; null without a GPU (words only)
  std::shared_ptr<const void> owner, loaded;    ///< owner null: the Kernel keeps the launch (its own cache)
  size_t workspace_bytes = 0;                   ///< scratch the launch needs (the pre-pass's amax), else 0
  std::optional<PreparedLaunch> prepass;        ///< NVFP4's tensor amax, prepared on the same inputs
  std::vector<int> prepass_inputs;              ///< its inputs' positions among ours
};

/// Throws Kernel::operator()'s UsageError when `workspace` does not suit a launch that needs
/// `bytes` of scratch (16-byte aligned, non-null) or needs none (0).
void check_workspace(bool needed, uint64_t workspace, size_t bytes);

}  // namespace mxjit::detail
