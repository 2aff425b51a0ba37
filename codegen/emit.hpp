#pragma once
/// \file Plan -> CUDA C++ text. The generated source includes mxjit's own headers by name
/// (templates/, handed to NVRTC as named headers), starts with a banner naming the pipeline (its
/// text form and hash), the plan and the schedule, and uses stable names so that two runs generate
/// byte-identical text.
#include <string>
#include <vector>

#include "codegen/plan.hpp"

namespace mxjit::detail {

/// A generated kernel: source text, entry point and plan.
struct GeneratedKernel {
  std::string source;
  std::string kernel_name;
  std::string file_name;  ///< e.g. "mxjit_columns_dim1_e4m3_rceil_bf16_0123abcd.cu" (logs, dumps, overrides)
  std::vector<std::string> headers;  ///< the templates/ headers the source includes by name
  Plan plan;
};

/// Generates the CUDA source of `p` for `target` and stride class `sc` under `plan` (make_plan's);
/// names the kernel (kernel_name).
GeneratedKernel generate(const Pipeline& p, const Target& target, const StrideClass& sc, Plan plan);
/// generate() of make_plan(p, target, sc, schedule, fit).
GeneratedKernel generate(const Pipeline& p, const Target& target, const StrideClass& sc, const Schedule& schedule = {},
                         Fit fit = Fit::exact);

/// The kernel's name by role: mxjit_<kind>_<scale axes>_<element format>_<scale rule>_<input
/// dtype>_<hash8>, e.g. mxjit_columns_dim1_e4m3_rceil_bf16_1f2e3d4c, so that profilers show what
/// ran; the hash covers the pipeline, target, stride class and plan.
std::string kernel_name(const Pipeline& p, const Plan& plan, const Target& target, const StrideClass& sc);

}  // namespace mxjit::detail
