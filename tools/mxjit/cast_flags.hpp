#pragma once
/// \file The cast options shared by `mxjit cast` and `mxjit compile`: either cast flags
/// (--elem, --scale, --rule, --block, ...) or one `--spec` in the short text form (plus --groups
/// for a spec with groups(axis,name))
/// (dsl/text.hpp), turned into the Pipeline the C++ DSL would build.
#include <CLI/CLI.hpp>

#include <string>

#include "dsl/pipeline.hpp"

namespace mxjit::tool {

/// The values of the cast options, as given on the command line.
struct CastFlags {
  std::string spec;                        ///< --spec: the short text form (excludes the cast flags)
  std::string preset;                      ///< --preset nvfp4
  std::string convention = "te";           ///< --convention te|torchao (NVFP4 only)
  std::string elem = "e4m3";               ///< --elem
  std::string scale = "e8m0";              ///< --scale e8m0|e4m3|fp32
  std::string rule = "floor";              ///< --rule (E8M0 scales only)
  std::string nan_policy = "nan_block";    ///< --nan-policy (E8M0 scales only)
  std::string block;                       ///< --block N or NxM ("" = 32, or 16 for E4M3 scales)
  int block_axis = -1;                     ///< --block-axis; negative counts from the end
  std::string elems_layout = "row_major";  ///< --elems-layout
  std::string scales_layout = "linear";    ///< --scales-layout
  std::string groups;                      ///< --groups: path of the int32 group ends (.npy)
  int group_axis = 0;                      ///< --group-axis
  bool flush = false;                      ///< --flush: FP32 subnormal inputs become +-0 first
  bool amax = false;                       ///< --amax: also output the tensor amax

  /// The options as registered, to tell "given" from "defaulted".
  CLI::Option* opt_spec = nullptr;
  CLI::Option* opt_convention = nullptr;
  CLI::Option* opt_rule = nullptr;
  CLI::Option* opt_nan_policy = nullptr;
  CLI::Option* opt_block_axis = nullptr;
  CLI::Option* opt_scale = nullptr;
};

/// Adds the cast options to `app`, bound to `flags` (which must outlive parsing). `--spec`
/// excludes every cast flag but --groups, `--preset` the format flags, `--groups` the block flags (CLI11
/// reports the conflict). `groups_help` describes what --groups takes for this command.
void add_cast_flags(CLI::App& app, CastFlags& flags, const std::string& groups_help);

/// The name the pipeline gives the offsets input of --groups.
inline constexpr const char* kOffsetsName = "offs";

/// Builds the pipeline: parse_pipeline(spec) when --spec was given (its dtype and rank are the
/// spec's), else the cast the flags describe on an input `x` of `dtype` and `rank`, with outputs
/// q, s (and amax), as the text form names them. Throws UsageError naming the flag or, for a
/// spec, with the column and caret lines.
Pipeline build_pipeline(const CastFlags& flags, DType dtype, int rank);

}  // namespace mxjit::tool
