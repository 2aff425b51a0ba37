#pragma once
/// \file The NVRTC wrapper: CUDA C++ text in, cubin (and optionally PTX) out. Needs no GPU.
#include <string>
#include <string_view>
#include <vector>

namespace mxjit::detail {

/// A header NVRTC resolves `#include "name"` to, from memory.
struct NvrtcHeader {
  std::string name;  ///< as the source includes it, e.g. "prelude.cuh"
  std::string text;
};

/// One NVRTC compilation. The source may include only `headers` (no system header).
struct NvrtcRequest {
  std::string source;                      ///< CUDA C++ text
  std::vector<NvrtcHeader> headers;        ///< headers by name (mxjit's templates/)
  std::string file_name = "kernel.cu";     ///< name used in the log and for MXJIT_DUMP_SOURCE
  std::string arch;                        ///< "sm_90a", "sm_100a", ... (compute_* gives PTX only)
  std::vector<std::string> extra_options;  ///< appended after mxjit's own options
  bool want_ptx = false;                   ///< also return the PTX
  bool want_cubin = true;                  ///< return the cubin (needs an sm_* arch)
  bool resource_usage = false;             ///< add --ptxas-options=-v; the report lands in the log
};

/// What NVRTC produced.
struct NvrtcOutput {
  std::string cubin;                 ///< ELF bytes, empty unless want_cubin
  std::string ptx;                   ///< PTX text, empty unless want_ptx
  std::string log;                   ///< the program log (warnings, ptxas -v report)
  std::vector<std::string> options;  ///< the options passed to NVRTC
  double compile_ms = 0;             ///< wall time of nvrtcCompileProgram
};

/// The options in MXJIT_NVRTC_OPTIONS (separated by whitespace; unset or empty: none). Every compile
/// appends them after mxjit's own and the cache key includes them: a way to try NVRTC flags (e.g.
/// --Ofast-compile=min) on the kernels, the tests and the benchmark without rebuilding. Flags that
/// change the arithmetic (--fmad=true, --use_fast_math) void the bit-exactness the tests check.
std::vector<std::string> env_nvrtc_options();

/// The options every compile for `arch` starts with: --std=c++17, --gpu-architecture=<arch>,
/// -default-device, --minimal, --fmad=false (bit-exactness: no contraction into FMA, no
/// fast-math), then env_nvrtc_options(). The cache key holds them as one line (nvrtc_options_text).
std::vector<std::string> nvrtc_base_options(const std::string& arch);

/// Compiles `req`. Options: nvrtc_base_options(req.arch), then req.extra_options and
/// --ptxas-options=-v when resource_usage. NVRTC 13 returns both PTX and cubin from one sm_*
/// compile. When MXJIT_DUMP_SOURCE is set to a folder (or to "1": ./mxjit_dump), the source is
/// written there as <file_name> first (a failed write prints one warning on stderr).
/// Throws CompileError("NVRTC failed to compile <file_name> for <arch>: <first error line>")
/// carrying the log, the options and the numbered source; CudaError for other NVRTC failures;
/// UsageError for an empty arch or want_cubin with a compute_* arch.
NvrtcOutput nvrtc_compile(const NvrtcRequest& req);

/// `text` with 1-based line numbers, each line formatted as "%5d| line", joined by '\n'.
std::string number_lines(std::string_view text);

/// The NVRTC version as major*1000 + minor*10 (13.0 -> 13000).
int nvrtc_version();

/// The NVRTC version as "major.minor" ("13.0").
std::string nvrtc_version_string();

}  // namespace mxjit::detail
