#pragma once
// Compiles a list of pipelines (each with its stride class) with NVRTC for sm_90a and sm_100a,
// in parallel, and checks that each gives an ELF cubin and NVRTC no warning; reads ptxas spill
// reports. No GPU needed.
#include <doctest/doctest.h>

#include <future>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "runtime/compile.hpp"

namespace mxjit::test {

/// A pipeline to compile, its stride class and schedule, and the name a failure reports.
struct CompileVariant {
  std::string name;
  Pipeline p;
  detail::StrideClass sc;
  Schedule schedule = {};
};

/// Compiles every variant for sm_90a and sm_100a; a CHECK per compile that it gave a cubin and,
/// where NVRTC ran (the disk cache keeps no log), that its log holds no warning and its source no
/// `(void)` cast: generated code declares nothing it does not use. Returns how many ran.
inline int compile_variants(const std::vector<CompileVariant>& vs) {
  int compiled = 0;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const Target t = Target::parse(arch);
    std::vector<std::future<std::string>> jobs;
    for (const CompileVariant& v : vs)
      jobs.push_back(std::async(std::launch::async, [&t, &v] {
        detail::CompileOptions o;
        o.schedule = v.schedule;
        const detail::CompiledKernel k = detail::compile(v.p, t, v.sc, o);
        if (k.cubin.size() <= 4 || k.cubin.compare(0, 4, "\x7f" "ELF") != 0) return "no cubin for " + v.name;
        if (!k.from_disk && k.log.find("warning") != std::string::npos) return "NVRTC warned on " + v.name + ":\n" + k.log;
        // Nothing declared to be silenced either: a kernel declares what it reads (finish_decls).
        if (k.source.find("(void)") != std::string::npos) return "a (void) cast in " + v.name;
        return std::string();
      }));
    for (auto& j : jobs) {
      const std::string failed = j.get();
      CHECK_MESSAGE(failed.empty(), failed << " (" << arch << ")");
      ++compiled;
    }
  }
  return compiled;
}

/// Bytes of register spill stores ptxas reports for `p` compiled for sm_90a, summed over the
/// module's kernels.
inline int spill_bytes(const Pipeline& p, const detail::StrideClass& sc, const Schedule& tu = {}) {
  detail::CompileOptions o;
  o.resource_usage = true;
  o.schedule = tu;
  const detail::CompiledKernel k = detail::compile(p, Target::parse("sm_90a"), sc, o);
  REQUIRE_MESSAGE(k.log.find("bytes spill stores") != std::string::npos, "no ptxas report in: " << k.log);
  int bytes = 0;  // every entry's (a module of two kernels reports each)
  for (size_t at = k.log.find("bytes spill stores"); at != std::string::npos;
       at = k.log.find("bytes spill stores", at + 1)) {
    size_t b = k.log.rfind(',', at);
    b = b == std::string::npos ? 0 : b + 1;
    bytes += std::stoi(k.log.substr(b, at - b));
  }
  return bytes;
}

}  // namespace mxjit::test
