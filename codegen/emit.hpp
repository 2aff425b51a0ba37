#pragma once
/// \file Plan -> CUDA C++ text. The generated source is self-contained (mxjit's own prelude,
/// no system headers), starts with a banner naming the pipeline, its hash, the plan and the
/// target, and uses stable names so that two runs generate byte-identical text.
#include <string>

#include "codegen/plan.hpp"

namespace mxjit::detail {

/// A generated kernel: source text, entry point and plan.
struct GeneratedKernel {
  std::string source;
  std::string kernel_name;
  std::string file_name;  ///< e.g. "mxjit_0123abcd.cu" (for logs and MXJIT_DUMP_SOURCE)
  Plan plan;
};

/// Generates the CUDA source of `p` for `target` and stride class `sc`.
GeneratedKernel generate(const Pipeline& p, const Target& target, const StrideClass& sc, const Tuning& tuning = {});

/// Words of the kernel's parameter block (every field 8 bytes), in the order the generated
/// `MxParams` declares them: in[], out[], shape[], in_stride[][], out_stride[][], out_shape[][],
/// tiles_r, tiles_c, aux.
int param_words(const Pipeline& p);

/// Words that follow those param_words() counts (after `aux`): when an output of `p` has a
/// grouped scale layout, `in_extent[]` (each input's extent along axis 0, for an offsets input its
/// group count), one per input; otherwise none.
int grouped_param_words(const Pipeline& p);

}  // namespace mxjit::detail
