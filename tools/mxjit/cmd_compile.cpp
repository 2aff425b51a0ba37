// `mxjit compile`: generates and compiles the kernel of a cast for an architecture (no GPU
// needed), through the SQLite cache like every other compile, and writes CUDA, PTX or cubin.
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "codegen/target.hpp"
#include "dsl/errors.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "tools/mxjit/cast_flags.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

struct CompileCommand {
  CastFlags flags;
  std::string dtype = "bf16";
  int rank = 2;
  std::string input_order = "c";
  std::string arch;
  std::string emit = "cubin";
  std::string out;
  bool resource_usage = false;
  std::string schedule;
};

DType dtype_named(const std::string& n) {
  if (n == "f16") return DType::f16;
  if (n == "f32") return DType::f32;
  return DType::bf16;
}

/// The exact arch: --arch, else GPU 0's.
Target target_of(const CompileCommand& c) {
  if (!c.arch.empty()) return Target::parse(c.arch);
  if (!gpu_available())
    throw UsageError(fmt::format("--arch is required without a GPU (e.g. --arch sm_90a or sm_100a; no GPU: {})",
                                 gpu_unavailable_reason()));
  return current_target();
}

void write_file(const std::string& path, const std::string& bytes) {
  write_output_file(path, bytes, fmt::format("--out '{}'", path));
}

int run_compile(const CompileCommand& c) {
  const Pipeline p = build_pipeline(c.flags, dtype_named(c.dtype), c.rank);
  const Target target = target_of(c);
  if (c.emit == "cubin" && c.out.empty()) throw UsageError("--emit cubin writes binary: give --out FILE");
  detail::StrideClass sc = detail::default_stride_class(p);
  if (c.input_order == "f")
    for (size_t i = 0; i < p.inputs().size(); ++i)
      if (p.inputs()[i].kind == InputDecl::Kind::tensor) sc.unit_axis[i] = 0;
  detail::CompileOptions options;
  options.want_ptx = c.emit == "ptx";
  options.resource_usage = c.resource_usage;
  if (!c.schedule.empty()) options.schedule = Schedule::parse(c.schedule);
  const detail::CompiledKernel k = detail::compile(p, target, sc, options);

  const std::string& payload = c.emit == "cuda" ? k.source : c.emit == "ptx" ? k.ptx : k.cubin;
  if (c.out.empty())
    std::fwrite(payload.data(), 1, payload.size(), stdout);
  else
    write_file(c.out, payload);
  if (c.resource_usage) fmt::print("{}{}", k.log, k.log.empty() || k.log.back() == '\n' ? "" : "\n");
  const std::string summary = fmt::format(
      "compiled {} for {} ({}): key {}, cubin {} bytes, {}{}", k.plan.kernel_name, target.arch, sc.str(),
      k.content_key.hex(), k.cubin.size(),
      k.from_disk ? std::string("from the disk cache") : fmt::format("NVRTC {:.1f} ms", k.compile_ms),
      c.out.empty() ? "" : fmt::format(", {} -> {}", c.emit, c.out));
  std::fprintf(c.out.empty() ? stderr : stdout, "%s\n", summary.c_str());
  return kExitOk;
}

Action setup(CLI::App& app) {
  auto c = std::make_shared<CompileCommand>();
  add_cast_flags(app, c->flags, "the cast has jagged groups (the file is not read: offsets are a kernel input)");
  CLI::Option* spec = app.get_option("--spec");
  spec->excludes(app.add_option("--dtype", c->dtype, "input dtype")
                     ->check(CLI::IsMember({"bf16", "f16", "f32"}))
                     ->capture_default_str());
  spec->excludes(app.add_option("--rank", c->rank, "input rank")->check(CLI::Range(1, 8))->capture_default_str());
  app.add_option("--input-order", c->input_order, "stride class: c (last axis unit-stride) or f (axis 0)")
      ->check(CLI::IsMember({"c", "f"}))
      ->capture_default_str();
  app.add_option("--arch", c->arch, "exact NVRTC arch: sm_89, sm_90a, sm_100a, sm_100f, sm_120a, ... "
                                    "(default: GPU 0's)");
  app.add_option("--emit", c->emit, "what to write")
      ->check(CLI::IsMember({"cuda", "ptx", "cubin"}))
      ->capture_default_str();
  app.add_option("--out", c->out, "output file (default: stdout for cuda and ptx)");
  app.add_flag("--resource-usage", c->resource_usage, "print the ptxas report (registers, shared memory, spills)");
  app.add_option("--schedule,--tuning", c->schedule,
                 "the schedule as `mxjit explore` prints it, e.g. \"tune(kernel=columns, rows_per_thread=8, stages=2)\"");
  return [c] { return run_compile(*c); };
}

const bool kRegistered =
    register_command({"compile", "generate and compile a cast kernel for an arch (no GPU needed)", setup});

}  // namespace
}  // namespace mxjit::tool
