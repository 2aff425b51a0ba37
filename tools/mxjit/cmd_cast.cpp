// `mxjit cast`: reads a .npy input, runs a cast on the GPU or the CPU reference, and writes each
// output as .npy (elems.npy, scales.npy, elems1.npy, ..., amax.npy) holding the logical tensor
// in C order, whatever layout the kernel wrote.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"
#include "dsl/text.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "tools/mxjit/cast_exec.hpp"
#include "tools/mxjit/cast_flags.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

namespace fs = std::filesystem;

struct CastCommand {
  CastFlags flags;
  std::string input;
  std::string device = "auto";
  int threads = 0;
  std::string out_dir = ".";
  bool verbose = false;
};

/// The input dtype a .npy element type stands for.
DType input_dtype(const NpyArray& a, const std::string& path) {
  switch (a.type) {
    case NpyType::u2: return DType::bf16;
    case NpyType::f2: return DType::f16;
    case NpyType::f4: return DType::f32;
    default: break;
  }
  throw UsageError(fmt::format("{}: holds {} values; the cast input must be <u2 (bf16 bits), <f2 (f16) or <f4 (f32)",
                               path, npy_descr(a.type)));
}

/// Creates `dir` if needed and checks that files can be written in it.
void prepare_out_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("--out-dir '{}': cannot create it: {}", dir.string(), ec.message()));
  if (!fs::is_directory(dir, ec)) throw UsageError(fmt::format("--out-dir '{}' is not a directory", dir.string()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(fmt::format("--out-dir '{}' is not writable", dir.string()));
}

/// The .npy file name of each output: elems/scales (numbered from the second cast on), amax.
std::vector<std::string> file_names(const Pipeline& p) {
  std::map<OutputKind, int> seen;
  std::vector<std::string> names;
  for (const Output& o : p.outputs()) {
    const int k = seen[o.kind]++;
    const std::string suffix = k == 0 ? "" : std::to_string(k);
    switch (o.kind) {
      case OutputKind::elems: names.push_back("elems" + suffix + ".npy"); break;
      case OutputKind::scales: names.push_back("scales" + suffix + ".npy"); break;
      case OutputKind::amax: names.push_back("amax" + suffix + ".npy"); break;
      case OutputKind::values: names.push_back(o.name + ".npy"); break;
    }
  }
  return names;
}

/// Checks that the .npy input fits the pipeline's declared input `x`.
void check_input(const Pipeline& p, const NpyArray& a, DType dtype, const std::string& path) {
  for (const InputDecl& d : p.inputs()) {
    if (d.kind != InputDecl::Kind::tensor) continue;
    if (d.dtype != dtype || d.rank != int(a.shape.size()))
      throw UsageError(fmt::format("{}: holds {}[{}] (rank {}) but the spec's input is {}[{}]", path,
                                   dtype_name(dtype), fmt::join(a.shape, ","), a.shape.size(), dtype_name(d.dtype),
                                   d.rank));
  }
}

/// Chooses the device and runs.
std::vector<HostOutput> run(const CastCommand& c, const Pipeline& p, const RunInputs& in, std::string& used) {
  if (c.device == "reference") {
    used = "cpu (reference)";
    return run_on_cpu(p, in);
  }
  if (c.device == "cpu") return run_on_host(p, in, c.threads, used);
  if (!gpu_available()) {
    if (c.device == "gpu") throw UsageError(fmt::format("--device gpu: no GPU ({})", gpu_unavailable_reason()));
    return run_on_host(p, in, c.threads, used);
  }
  if (c.device == "auto") {
    std::string why;
    if (!gpu_accepts(p, why)) {
      print_notice(fmt::format("{}; running on the CPU reference", why));
      used = "cpu (reference)";
      return run_on_cpu(p, in);
    }
  }
  used = fmt::format("gpu ({})", current_target().arch);
  return run_on_gpu(p, in);
}

int run_cast(const CastCommand& c) {
  const NpyArray x = read_npy(c.input);
  if (x.shape.empty())
    throw UsageError(fmt::format("{}: holds a scalar (shape ()); the cast input needs rank >= 1", c.input));
  const DType dtype = input_dtype(x, c.input);
  const Pipeline p = build_pipeline(c.flags, dtype, int(x.shape.size()));
  check_input(p, x, dtype, c.input);

  RunInputs in;
  in.domain = x.shape;
  NpyArray offs;
  bool fed_offsets = false;
  for (const InputDecl& d : p.inputs()) {
    if (d.kind == InputDecl::Kind::tensor) {
      in.views.push_back(TensorView::strided(const_cast<uint8_t*>(x.data.data()), dtype, x.shape, x.strides()));
    } else if (d.kind == InputDecl::Kind::offsets) {
      if (c.flags.groups.empty())
        throw UsageError(fmt::format("the spec's groups need their ends: pass --groups FILE.npy (int32 '{}')", d.name));
      if (!fed_offsets) offs = read_npy(c.flags.groups);
      fed_offsets = true;
      if (offs.type != NpyType::i4 || offs.shape.size() != 1)
        throw UsageError(fmt::format("{}: group ends must be a 1-D <i4 array, got {} of rank {}", c.flags.groups,
                                     npy_descr(offs.type), offs.shape.size()));
      in.groups = offs.shape[0];
      in.views.push_back(TensorView::contiguous(offs.data.data(), DType::i32, offs.shape));
    } else {
      throw UsageError(fmt::format("input '{}': this command feeds one cast input (and group ends) only", d.name));
    }
  }
  if (!c.flags.groups.empty() && !fed_offsets)
    throw UsageError(fmt::format("--groups {}: the cast has no groups (a spec names them as groups(axis,name))",
                                 c.flags.groups));

  const fs::path dir(c.out_dir);
  prepare_out_dir(dir);
  const std::vector<std::string> names = file_names(p);
  // Every output's geometry is checked (e.g. an odd FP4 extent) before anything runs.
  std::string used;
  const std::vector<HostOutput> outs = run(c, p, in, used);
  // Every file under a temporary name first, then all renamed at once: a failed write leaves
  // nothing, and two casts into one --out-dir never leave the elems of one and the scales of the other.
  StagedFiles files(dir);
  std::string listing;
  for (size_t o = 0; o < outs.size(); ++o) {
    const NpyArray a = to_npy(outs[o]);
    files.add(names[o], encode_npy(a), fmt::format("output '{}'", outs[o].name));
    listing += fmt::format(" {} {}[{}]", files.path(names[o]).string(), npy_descr(a.type), fmt::join(a.shape, ","));
  }
  files.commit();
  if (c.verbose) fmt::print("spec: {}\n", to_text(p));
  fmt::print("cast {}[{}]{} on {}:{}\n", dtype_name(dtype), fmt::join(x.shape, ","), x.fortran_order ? " (Fortran order)" : "",
             used, listing);
  return kExitOk;
}

Action setup(CLI::App& app) {
  auto c = std::make_shared<CastCommand>();
  app.add_option("input", c->input, "input .npy: <u2 (bf16 bits), <f2 or <f4; C or Fortran order")
      ->required()
      ->check(CLI::ExistingFile);
  add_cast_flags(app, c->flags, "int32 group ends (.npy, 1-D <i4), e.g. MoE token group ends");
  app.add_option("--device", c->device,
                 "auto: the GPU if there is one, else the CPU (LLVM JIT backend); reference: the CPU reference")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "reference"}))
      ->capture_default_str();
  app.add_option("--threads", c->threads, "CPU threads for --device cpu (0: all cores)")->check(CLI::Range(0, 1024));
  app.add_option("--out-dir", c->out_dir, "folder for elems.npy, scales.npy, ...")->capture_default_str();
  app.add_flag("-v,--verbose", c->verbose, "print the pipeline in its text form");
  return [c] { return run_cast(*c); };
}

const bool kRegistered = register_command({"cast", "cast a .npy tensor to MX elements and scales (.npy out)", setup});

}  // namespace
}  // namespace mxjit::tool
