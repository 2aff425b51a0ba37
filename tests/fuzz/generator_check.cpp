#include "generator_check.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <typeinfo>
#include <vector>

#include <fmt/format.h>

#include "codegen/emit.hpp"
#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/limits.hpp"
#include "pipeline_gen.hpp"
#include "runtime/bindings.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "backends/reference/executor.hpp"
#include "support/fp32_edges.hpp"
#include "support/tensors.hpp"
#if MXJIT_HAVE_LLVM
#include "backends/llvm/cpu_backend.hpp"
#endif

namespace mxjit::fuzz {
namespace {

constexpr int64_t kMaxOutputBytes = int64_t(1) << 26;  // larger outputs are not allocated here

/// A view and the bytes behind it (none for an empty or never-read view).
struct Buffer {
  std::optional<test::HostTensor> host;
  std::vector<uint8_t> dummy = std::vector<uint8_t>(64);
  TensorView v;
};

/// The outcome of one backend: ran, or refused with a UsageError (its message).
struct Outcome {
  bool ran = false;
  std::string refused;
  bool index_values = false;  ///< refused for a device index array's values (IndexValuesError)
};

template <class F>
Outcome attempt(F&& f) {
  try {
    f();
    return {true, ""};
  } catch (const IndexValuesError& e) {
    return {false, e.what(), true};
  } catch (const UsageError& e) {
    return {false, e.what()};
  }
}

/// Counts a refusal under its message with numbers as N and quoted names as '_' (one key per rule).
void count_refusal(Stats& s, const std::string& msg) {
  std::string key;
  bool quoted = false;
  for (size_t i = 0; i < msg.size() && msg[i] != '\n' && key.size() < 90; ++i) {
    const char ch = msg[i];
    if (ch == '\'') {
      if (!quoted) key += "'_'";
      quoted = !quoted;
    } else if (!quoted && std::isdigit(static_cast<unsigned char>(ch))) {
      if (key.empty() || key.back() != 'N') key += 'N';
    } else if (!quoted) {
      key += ch;
    }
  }
  s.refusals[key] += 1;
}

Buffer input_buffer(const Pipeline& p, const Case& k, size_t i) {
  const InputDecl& d = p.inputs()[i];
  const InputData& in = k.inputs[i];
  Buffer b;
  if (in.unaddressable || element_count(in.shape).value_or(1) == 0) {
    b.v = TensorView::strided(b.dummy.data(), in.dtype, in.shape, in.strides);
    return b;
  }
  b.host.emplace(in.dtype, in.shape, in.strides);
  test::HostTensor& t = *b.host;
  const uint64_t seed = k.seed * 131 + i;
  if (d.kind == InputDecl::Kind::offsets || d.kind == InputDecl::Kind::counts) {
    std::memcpy(t.bytes.data(), in.ends.data(), std::min(t.bytes.size(), in.ends.size() * 4));
  } else if (d.kind == InputDecl::Kind::codes || d.kind == InputDecl::Kind::scales) {
    std::mt19937_64 rng(seed);
    if (in.dtype == DType::f32) {
      test::fill_random(t, seed, in.fill == Fill::adversarial);
    } else {
      // Codes: any byte; byte scales: mostly moderate exponents, with 0, 254 and 255 (NaN).
      const uint8_t special[] = {0, 254, 255, 127};
      for (size_t j = 0; j < t.bytes.size(); ++j)
        t.bytes[j] = d.kind == InputDecl::Kind::codes ? uint8_t(rng()) : j % 7 == 3 ? special[(j / 7) % 4] : uint8_t(110 + rng() % 30);
    }
  } else if (in.fill == Fill::edge && in.dtype != DType::f16) {
    const std::vector<float> edges = in.dtype == DType::f32 ? test::fp32_edge_amaxes() : test::bf16_edge_amaxes();
    test::fill_edge(t, edges[size_t(in.edge) % edges.size()], seed);
  } else {
    test::fill_random(t, seed, in.fill != Fill::random);
  }
  b.v = t.v;
  return b;
}

/// The groups count output_geometry needs for output `o`: the extent of its grouped layout's
/// offsets input, else of its blocks' offsets input.
int64_t groups_of(const Pipeline& p, const std::vector<Buffer>& in, size_t o) {
  const Output& out = p.outputs()[o];
  std::string name;
  if (out.layout.grouped()) name = out.layout.group_offsets();
  else if ((out.kind == OutputKind::elems || out.kind == OutputKind::scales) && block_of(out.node).jagged())
    name = block_of(out.node).offsets;
  const int i = name.empty() ? -1 : p.input_index(name);
  return i < 0 ? 0 : in[size_t(i)].v.shape.at(0);
}

/// Compares `got` with the reference's output bytes (the first `n`) and checks both guard tails.
void compare(const std::string& who, const Case& k, const Pipeline& p, size_t o, const std::vector<uint8_t>& ref,
             const std::vector<uint8_t>& got, size_t n, uint8_t ref_poison, uint8_t got_poison, Stats& s) {
  for (size_t i = 0; i < n; ++i)
    if (ref[i] != got[i])
      throw Defect(fmt::format("{} differs from the reference: output '{}' byte {} of {}: reference 0x{:02x}, {} 0x{:02x}",
                               who, p.outputs()[o].name, i, n, ref[i], who, got[i]));
  for (size_t i = n; i < ref.size(); ++i)
    if (ref[i] != ref_poison || got[i] != got_poison)
      throw Defect(fmt::format("output '{}': a byte past its {} bytes was written ({} or the reference)", p.outputs()[o].name, n, who));
  s.bytes_compared += int64_t(n);
  (void)k;
}

/// Output buffers poisoned with `poison`: storage bytes plus a 64-byte guard.
struct Outputs {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<TensorView> views;
  Outputs(const Pipeline& p, const std::vector<OutputGeometry>& g, uint8_t poison) {
    for (size_t o = 0; o < g.size(); ++o) bytes.emplace_back(size_t(g[o].storage_bytes) + 64, poison);
    for (size_t o = 0; o < g.size(); ++o)
      views.push_back(TensorView::strided(bytes[o].data(), p.outputs()[o].dtype, g[o].view_shape, g[o].view_strides));
  }
};

void compile_for_both_arches(const Pipeline& p, const detail::StrideClass& sc, Stats& s) {
  static std::set<std::string> done;  // in-process memo (the disk cache keeps them across runs)
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const std::string key = p.hash().hex() + arch + sc.str();
    if (done.count(key)) continue;
    try {
      const detail::CompiledKernel ck = detail::compile(p, Target::parse(arch), sc, {});
      if (ck.cubin.size() < 4 || ck.cubin.compare(0, 4, "\x7f" "ELF") != 0)
        throw Defect(fmt::format("NVRTC gave no cubin for {}", arch));
      // Generated code declares only what it reads (compile_variants' rule); the disk cache keeps no log.
      if (!ck.from_disk && ck.log.find("warning") != std::string::npos)
        throw Defect(fmt::format("NVRTC warned for {} ({}):\n{}", arch, sc.str(), ck.log.substr(0, 2000)));
      if (ck.source.find("(void)") != std::string::npos)
        throw Defect(fmt::format("a (void) cast in the kernel for {} ({})", arch, sc.str()));
      ++s.compiled;
    } catch (const UsageError& e) {
      ++s.compile_refused;
      count_refusal(s, e.what());
    } catch (const CompileError& e) {
      throw Defect(fmt::format("NVRTC error for {} ({}): {}\n{}", arch, sc.str(), e.what(), e.log().substr(0, 2000)));
    }
    done.insert(key);
  }
}

void run_case(const Case& k, Stats& s) {
  if (!k.pipeline) {
    count_refusal(s, k.refused);
    return;
  }
  const Pipeline& p = *k.pipeline;
  ++s.built;
  std::vector<Buffer> in;
  for (size_t i = 0; i < p.inputs().size(); ++i) in.push_back(input_buffer(p, k, i));
  std::vector<TensorView> in_views;
  for (const Buffer& b : in) in_views.push_back(b.v);

  std::vector<OutputGeometry> geo;
  const Outcome g = attempt([&] {
    for (size_t o = 0; o < p.outputs().size(); ++o) geo.push_back(output_geometry(p, int(o), k.domain, groups_of(p, in, o)));
  });
  bool runnable = g.ran;
  for (const OutputGeometry& og : geo) runnable = runnable && og.storage_bytes <= kMaxOutputBytes;
  if (g.ran && !runnable) ++s.too_big;

  // The generator and NVRTC, for the stride class this launch would compile.
  detail::StrideClass sc = detail::default_stride_class(p);
  if (runnable) {
    Outputs probe(p, geo, 0);
    try {
      detail::Binding b = detail::check_bindings(p, in_views, probe.views, DeviceKind::cpu);
      sc = detail::StrideClass{b.unit_axis, b.aligned};
    } catch (const UsageError&) {
    }
  }
  compile_for_both_arches(p, sc, s);
  if (!g.ran) count_refusal(s, g.refused);
  if (!runnable) return;

  // Masked rows keep what the buffers held: every backend's buffers then start from the same poison.
  const bool masked = p.mask().active();
  const auto poison = [&](uint8_t own) { return masked ? uint8_t(0xA5) : own; };
  Outputs ref(p, geo, 0xA5);
  const Outcome r = attempt([&] { reference::run(p, in_views, ref.views); });
  if (r.ran) ++s.reference_ran;
  else {
    ++s.reference_refused;
    count_refusal(s, r.refused);
  }
  const auto check_backend = [&](const char* who, const Outcome& b, const Outputs& out, uint8_t poison, int& matched, int& refused) {
    if (!b.ran) {
      if (r.ran) count_refusal(s, b.refused);  // a backend limit, named
      ++refused;
      return;
    }
    if (!r.ran) throw Defect(fmt::format("{} ran what the reference refused: {}", who, r.refused));
    for (size_t o = 0; o < geo.size(); ++o)
      compare(who, k, p, o, ref.bytes[o], out.bytes[o], size_t(geo[o].storage_bytes), 0xA5, poison, s);
    ++matched;
  };
#if MXJIT_HAVE_LLVM
  if (cpu::cpu_backend_available()) {
    Outputs out(p, geo, poison(0x5A));
    const Outcome c = attempt([&] { cpu::cpu_jit(p)(in_views, out.views, 2); });
    check_backend("the CPU backend", c, out, poison(0x5A), s.cpu_matched, s.cpu_refused);
  }
#endif
  // Offsets and counts are device arrays: a kernel cannot refuse their values without a host round
  // trip, so it trusts offsets and clamps counts (docs/design.md §5). The reference's refusals of
  // those values (IndexValuesError) are not the GPU's to repeat.
  const bool device_values = !r.ran && r.index_values;
  if (gpu_available() && !device_values) {
    std::vector<DeviceBuffer> dev;
    std::vector<TensorView> dev_in, dev_out;
    for (const Buffer& b : in) {
      const std::vector<uint8_t>& bytes = b.host ? b.host->bytes : b.dummy;
      dev.push_back(DeviceBuffer::alloc(bytes.size()));
      dev.back().upload(bytes.data(), bytes.size());
      TensorView v = b.v;
      v.data = reinterpret_cast<void*>(dev.back().ptr() + (reinterpret_cast<const uint8_t*>(b.v.data) - bytes.data()));
      v.device = DeviceKind::cuda;
      dev_in.push_back(v);
    }
    Outputs out(p, geo, poison(0x3C));
    for (size_t o = 0; o < geo.size(); ++o) {
      dev.push_back(DeviceBuffer::alloc(out.bytes[o].size()));
      dev.back().upload(out.bytes[o].data(), out.bytes[o].size());
      TensorView v = out.views[o];
      v.data = reinterpret_cast<void*>(dev.back().ptr());
      v.device = DeviceKind::cuda;
      dev_out.push_back(v);
    }
    const Outcome gr = attempt([&] {
      jit(p)(0, dev_in, dev_out);
      Stream::null().synchronize();
    });
    for (size_t o = 0; o < geo.size(); ++o) dev[in.size() + o].download(out.bytes[o].data(), out.bytes[o].size());
    check_backend("the GPU", gr, out, poison(0x3C), s.gpu_matched, s.gpu_refused);
  }
}

}  // namespace

void check_case(const uint8_t* data, size_t size, Stats& stats) {
  ++stats.cases;
  Choices c(data, size);
  Case k;
  try {
    k = generate_case(c);
    stats.last_recipe = k.recipe;
    if (stats.echo) std::fprintf(stderr, "case: %s\n", k.recipe.c_str());
    run_case(k, stats);
  } catch (const Defect& d) {
    throw Defect(fmt::format("{}\n  case: {}", d.what(), k.recipe));
  } catch (const std::exception& e) {
    // Every deliberate error is a UsageError (caught above, per stage); anything else is a defect.
    throw Defect(fmt::format("unexpected {}: {}\n  case: {}", typeid(e).name(), e.what(), k.recipe));
  }
}

std::string summary(const Stats& s) {
  std::string t = fmt::format(
      "{} cases: {} pipelines built; NVRTC {} compiles (sm_90a + sm_100a), {} refused by the generator; reference {} "
      "ran, {} refused; CPU backend {} bit-identical, {} refused; GPU {} bit-identical, {} refused; {} too large to "
      "run here; {} bytes compared\n",
      s.cases, s.built, s.compiled, s.compile_refused, s.reference_ran, s.reference_refused, s.cpu_matched,
      s.cpu_refused, s.gpu_matched, s.gpu_refused, s.too_big, s.bytes_compared);
  t += "refusals (UsageError, by first words):\n";
  for (const auto& [what, n] : s.refusals) t += fmt::format("  {:5}  {}\n", n, what);
  return t;
}

}  // namespace mxjit::fuzz
