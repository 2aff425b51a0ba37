#include "runtime/nvrtc.hpp"

#include <nvrtc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit::detail {

namespace {

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r == NVRTC_SUCCESS) return;
  throw CudaError(fmt::format("{} failed: {}", call, nvrtcGetErrorString(r)), call,
                  static_cast<int>(r));
}

/// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

/// Writes the source under $MXJIT_DUMP_SOURCE, warning once on stderr when that fails.
void dump_source(const NvrtcRequest& req) {
  const char* env = std::getenv("MXJIT_DUMP_SOURCE");
  if (!env || !*env || std::string_view(env) == "0") return;
  namespace fs = std::filesystem;
  fs::path dir = std::string_view(env) == "1" ? fs::path("mxjit_dump") : fs::path(env);
  fs::path file = dir / req.file_name;
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (out) out.write(req.source.data(), static_cast<std::streamsize>(req.source.size()));
  if (ec || !out) {
    std::fprintf(stderr, "mxjit: warning: MXJIT_DUMP_SOURCE: could not write %s%s%s\n",
                 file.string().c_str(), ec ? ": " : "", ec ? ec.message().c_str() : "");
  }
}

/// The first line of the log that reports an error, else its first non-empty line.
std::string first_error_line(const std::string& log) {
  std::string first_nonempty;
  size_t pos = 0;
  while (pos <= log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    std::string_view line(log.data() + pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) {
      if (line.find("error") != std::string_view::npos) return std::string(line);
      if (first_nonempty.empty()) first_nonempty = line;
    }
    pos = end + 1;
  }
  return first_nonempty;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& o : v) {
    if (!s.empty()) s += ' ';
    s += o;
  }
  return s;
}

}  // namespace

std::string number_lines(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8 + 16);
  int n = 1;
  size_t pos = 0;
  while (true) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? text.size() - pos : end - pos);
    if (n > 1) out += '\n';
    out += fmt::format("{:5d}| {}", n++, line);
    if (end == std::string_view::npos || end + 1 == text.size()) break;
    pos = end + 1;
  }
  return out;
}

int nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return major * 1000 + minor * 10;
}

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> env_nvrtc_options() {
  std::vector<std::string> v;
  const char* env = std::getenv("MXJIT_NVRTC_OPTIONS");
  std::istringstream words(env ? env : "");
  for (std::string w; words >> w;) v.push_back(std::move(w));
  return v;
}

std::vector<std::string> nvrtc_base_options(const std::string& arch) {
  std::vector<std::string> v = {"--std=c++17", "--gpu-architecture=" + arch, "-default-device", "--minimal", "--fmad=false"};
  for (std::string& o : env_nvrtc_options()) v.push_back(std::move(o));
  return v;
}

NvrtcOutput nvrtc_compile(const NvrtcRequest& req) {
  if (req.arch.empty()) throw UsageError("nvrtc_compile: the target arch is empty (want e.g. \"sm_90a\")");
  if (req.want_cubin && req.arch.rfind("sm_", 0) != 0)
    throw UsageError(fmt::format(
        "nvrtc_compile: a cubin needs an sm_* arch, got \"{}\" (use want_cubin=false for PTX only)",
        req.arch));
  const std::string file_name = req.file_name.empty() ? std::string("kernel.cu") : req.file_name;

  NvrtcOutput out;
  out.options = nvrtc_base_options(req.arch);
  for (const auto& o : req.extra_options) out.options.push_back(o);
  if (req.resource_usage) out.options.push_back("--ptxas-options=-v");
  std::vector<const char*> argv;
  argv.reserve(out.options.size());
  for (const auto& o : out.options) argv.push_back(o.c_str());

  dump_source(req);

  std::vector<const char*> header_texts, header_names;
  for (const NvrtcHeader& h : req.headers) {
    header_texts.push_back(h.text.c_str());
    header_names.push_back(h.name.c_str());
  }
  Program prog;
  check_nvrtc(nvrtcCreateProgram(&prog.handle, req.source.c_str(), file_name.c_str(), int(req.headers.size()),
                                 header_texts.data(), header_names.data()),
              "nvrtcCreateProgram");
  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult r = nvrtcCompileProgram(prog.handle, static_cast<int>(argv.size()), argv.data());
  auto t1 = std::chrono::steady_clock::now();
  out.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();

  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog.handle, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    if (nvrtcGetProgramLog(prog.handle, out.log.data()) != NVRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }

  if (r != NVRTC_SUCCESS) {
    std::string first = first_error_line(out.log);
    if (first.empty()) first = nvrtcGetErrorString(r);
    throw CompileError(
        fmt::format("NVRTC failed to compile {} for {}: {}", file_name, req.arch, first),
        out.log.empty() ? std::string(nvrtcGetErrorString(r)) : out.log, join(out.options),
        number_lines(req.source));
  }

  if (req.want_cubin) {
    size_t n = 0;
    check_nvrtc(nvrtcGetCUBINSize(prog.handle, &n), "nvrtcGetCUBINSize");
    out.cubin.resize(n);
    if (n) check_nvrtc(nvrtcGetCUBIN(prog.handle, out.cubin.data()), "nvrtcGetCUBIN");
  }
  if (req.want_ptx) {
    size_t n = 0;
    check_nvrtc(nvrtcGetPTXSize(prog.handle, &n), "nvrtcGetPTXSize");
    out.ptx.resize(n);
    if (n) check_nvrtc(nvrtcGetPTX(prog.handle, out.ptx.data()), "nvrtcGetPTX");
    while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  }
  return out;
}

}  // namespace mxjit::detail
