#pragma once
/// \file Typed errors thrown by mxjit. Library code never calls exit(); the tool maps these
/// to one clear line and a non-zero exit status.
#include <stdexcept>
#include <string>

namespace mxjit {

/// Base of every error mxjit throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The user's mistake, described in words: which argument, which rule.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// A device index array's values break a rule: group ends (`offsets`) that decrease, pass the
/// extent or split a block, masked-row counts outside [0, extent]. The CPU backends check the
/// values; GPU kernels cannot without a host round trip and trust or clamp them (docs/design.md §5),
/// so a caller comparing backends tells these refusals from the pipeline's own by type.
class IndexValuesError : public UsageError {
 public:
  using UsageError::UsageError;
};

/// NVRTC rejected generated source. Carries everything needed to reproduce it.
class CompileError : public Error {
 public:
  CompileError(std::string what, std::string log, std::string options, std::string numbered_source)
      : Error(std::move(what)), log_(std::move(log)), options_(std::move(options)),
        numbered_source_(std::move(numbered_source)) {}
  /// The NVRTC program log.
  const std::string& log() const noexcept { return log_; }
  /// The NVRTC options, space separated.
  const std::string& options() const noexcept { return options_; }
  /// The generated source with 1-based line numbers, as the log refers to them.
  const std::string& numbered_source() const noexcept { return numbered_source_; }

 private:
  std::string log_, options_, numbered_source_;
};

/// A CUDA Driver API (or NVRTC) call failed, or no driver/GPU is present.
class CudaError : public Error {
 public:
  CudaError(std::string what, std::string call, int code)
      : Error(std::move(what)), call_(std::move(call)), code_(code) {}
  /// The failing call, e.g. "cuLibraryLoadData".
  const std::string& call() const noexcept { return call_; }
  /// The CUresult / nvrtcResult code (-1 when there was no call, e.g. no driver).
  int code() const noexcept { return code_; }

 private:
  std::string call_;
  int code_;
};

}  // namespace mxjit
