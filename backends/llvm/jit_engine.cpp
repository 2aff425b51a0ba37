#include "backends/llvm/jit_engine.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <mutex>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "cache/key.hpp"
#include "dsl/errors.hpp"
#include "runtime/compile.hpp"
#include "backends/llvm/helpers.hpp"
#include "backends/llvm/lower.hpp"

namespace mxjit::cpu::detail {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

/// $MXJIT_DUMP_SOURCE ("1": ./mxjit_dump) as for the GPU path, or empty when unset.
std::filesystem::path dump_dir() {
  const char* env = std::getenv("MXJIT_DUMP_SOURCE");
  if (!env || !*env || std::string_view(env) == "0") return {};
  return std::string_view(env) == "1" ? std::filesystem::path("mxjit_dump") : std::filesystem::path(env);
}

void dump(const std::filesystem::path& file, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (ec || !out) std::fprintf(stderr, "mxjit: warning: MXJIT_DUMP_SOURCE: could not write %s\n", file.c_str());
}

std::string to_string(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

/// The LLJIT, the host TargetMachine and the in-process cache.
class Engine {
 public:
  static Engine& get() {
    static Engine engine;
    if (!engine.error_.empty()) throw UsageError("CPU backend unavailable: " + engine.error_);
    return engine;
  }

  std::shared_ptr<const CompiledFunction> compile(const Pipeline& p, const std::vector<int>& unit, bool memory) {
    const std::string key = fmt::format("{}|{}", p.hash().hex(), fmt::join(unit, ","));
    std::lock_guard<std::mutex> lock(mutex_);
    if (!memory) return build(p, unit);
    auto it = functions_.find(key);
    ::mxjit::detail::disk_cache().count_memory_lookup(it != functions_.end());
    if (it != functions_.end()) return it->second;
    auto f = build(p, unit);
    functions_.emplace(key, f);
    return f;
  }

  const std::string& error() const { return error_; }
  const std::string& target() const { return target_; }

 private:
  Engine() {
    try {
      init();
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    if (error_.empty() && !jit_) error_ = "LLVM could not be initialised";
  }

  void init() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) throw Error("no LLVM target for this host: " + to_string(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    jtmb->setCodeModel(llvm::CodeModel::Small);  // RIP-relative constants; what LLJIT's JITLink expects
    jtmb->getOptions().AllowFPOpFusion = llvm::FPOpFusion::Strict;  // never fuse: the reference's bits
    cpu_ = jtmb->getCPU();
    features_ = jtmb->getFeatures().getString();
    target_ = fmt::format("host-{}-{}", cpu_, hash128(features_).hex().substr(0, 8));
    auto tm = jtmb->createTargetMachine();
    if (!tm) throw Error("no TargetMachine for the host: " + to_string(tm.takeError()));
    tm_ = std::move(*tm);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    if (!jit) throw Error("LLJIT: " + to_string(jit.takeError()));
    jit_ = std::move(*jit);
    llvm::orc::JITDylib& jd = jit_->getMainJITDylib();
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
    if (!gen) throw Error("LLJIT: " + to_string(gen.takeError()));
    jd.addGenerator(std::move(*gen));
    llvm::orc::SymbolMap symbols;
    for (const HelperSymbol& h : helper_symbols())
      symbols[jit_->mangleAndIntern(h.name)] = llvm::JITEvaluatedSymbol(
          llvm::pointerToJITTargetAddress(h.address), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    if (auto err = jd.define(llvm::orc::absoluteSymbols(std::move(symbols))))
      throw Error("LLJIT: " + to_string(std::move(err)));
  }

  std::string optimise_and_emit(llvm::Module& m) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    // Loop vectorisation on; unrolling, interleaving and SLP off: they more than double the
    // compile time (codegen of unrolled bodies) and the kernels are no faster with them.
    llvm::PipelineTuningOptions pto;
    pto.LoopUnrolling = false;
    pto.LoopInterleaving = false;
    pto.SLPVectorization = false;
    pto.LoopVectorization = true;
    llvm::PassBuilder pb(tm_.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(m, mam);
    const std::filesystem::path dir = dump_dir();
    if (!dir.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << m;
      dump(dir / (m.getName().str() + ".opt.ll"), os.str());
      llvm::SmallVector<char, 0> asm_buf;
      llvm::raw_svector_ostream aos(asm_buf);
      llvm::legacy::PassManager apm;
      if (!tm_->addPassesToEmitFile(apm, aos, nullptr, llvm::CGFT_AssemblyFile)) {
        apm.run(m);
        dump(dir / (m.getName().str() + ".s"), std::string(asm_buf.begin(), asm_buf.end()));
      }
    }
    llvm::SmallVector<char, 0> buf;
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (tm_->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
      throw Error("LLVM: the host TargetMachine cannot emit object files");
    pm.run(m);
    return std::string(buf.begin(), buf.end());
  }

  std::shared_ptr<const CompiledFunction> build(const Pipeline& p, const std::vector<int>& unit) {
    const auto t0 = Clock::now();
    auto f = std::make_shared<CompiledFunction>();
    f->plan = make_cpu_plan(p, unit);
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> m = lower_pipeline(p, f->plan, ctx);
    m->setTargetTriple(tm_->getTargetTriple().str());
    m->setDataLayout(tm_->createDataLayout());
    {
      llvm::raw_string_ostream os(f->ir_text);
      os << "; " << f->plan.str() << "\n" << *m;
    }
    f->info.lower_ms = ms_since(t0);
    if (const std::filesystem::path dir = dump_dir(); !dir.empty()) dump(dir / (f->plan.function_name + ".ll"), f->ir_text);
    cache::KeyParts parts;
    parts.generator_version = kCpuGeneratorVersion;
    parts.source = f->ir_text;
    parts.options = "O3 no-unroll no-interleave no-slp fp-contract=off code-model=small " + features_;
    parts.arch = target_;
    parts.toolchain_version = std::string("llvm-") + MXJIT_LLVM_VERSION;
    const Hash128 key = cache::content_key(parts);
    f->info.content_key = key.hex();
    cache::DiskCache& disk = ::mxjit::detail::disk_cache();
    std::string object;
    if (auto hit = disk.get(key)) {
      object = std::move(hit->blob);
      f->info.from_disk = true;
    } else {
      const auto t1 = Clock::now();
      object = optimise_and_emit(*m);
      f->info.compile_ms = ms_since(t1);
      cache::CacheEntry e;
      e.key = key;
      e.kernel_name = f->plan.function_name;
      e.arch = target_;
      e.toolchain_version = parts.toolchain_version;
      e.blob = object;
      e.meta = f->plan.str();
      e.compile_ms = f->info.compile_ms;
      disk.put(e);
    }
    if (const std::filesystem::path dir = dump_dir(); !dir.empty()) dump(dir / (f->plan.function_name + ".o"), object);
    // Each object in a JITDylib of its own (helpers and libc come from the main one), so that one
    // kernel may be linked twice (a test that bypasses the in-process cache).
    auto jd = jit_->createJITDylib(fmt::format("mxcpu_jd{}", dylibs_++));
    if (!jd) throw Error("LLJIT: " + to_string(jd.takeError()));
    jd->addToLinkOrder(jit_->getMainJITDylib());
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, f->plan.function_name);
    if (auto err = jit_->addObjectFile(*jd, std::move(buffer))) {
      if (f->info.from_disk) disk.remove(key);
      throw Error("LLJIT: cannot link " + f->plan.function_name + ": " + to_string(std::move(err)));
    }
    auto addr = jit_->lookup(*jd, f->plan.function_name);
    if (!addr) {
      if (f->info.from_disk) disk.remove(key);
      throw Error("LLJIT: " + to_string(addr.takeError()));
    }
    f->fn = addr->toPtr<CompiledFunction::Fn>();
    f->info.fn_address = addr->getValue();
    f->info.total_ms = ms_since(t0);
    return f;
  }

  std::mutex mutex_;
  std::string error_, cpu_, features_, target_;
  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::map<std::string, std::shared_ptr<const CompiledFunction>> functions_;
  int64_t dylibs_ = 0;
};

}  // namespace

std::shared_ptr<const CompiledFunction> compile_function(const Pipeline& p, const std::vector<int>& unit_axis,
                                                        bool memory_cache) {
  return Engine::get().compile(p, unit_axis, memory_cache);
}

bool engine_available(std::string* reason) {
  try {
    Engine::get();
    return true;
  } catch (const std::exception& e) {
    if (reason) *reason = e.what();
    return false;
  }
}

std::string host_target_name() { return Engine::get().target(); }

}  // namespace mxjit::cpu::detail
