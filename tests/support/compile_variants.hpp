#pragma once
// Compiles a list of pipelines (each with its stride class) with NVRTC for sm_90a and sm_100a,
// in parallel, and checks that each gives an ELF cubin. No GPU needed.
#include <doctest/doctest.h>

#include <future>
#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "runtime/compile.hpp"

namespace mxjit::test {

/// A pipeline to compile, its stride class and the name a failure reports.
struct CompileVariant {
  std::string name;
  Pipeline p;
  detail::StrideClass sc;
};

/// Compiles every variant for sm_90a and sm_100a; a CHECK per compile. Returns how many ran.
inline int compile_variants(const std::vector<CompileVariant>& vs) {
  int compiled = 0;
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    const Target t = Target::parse(arch);
    std::vector<std::future<std::string>> jobs;
    for (const CompileVariant& v : vs)
      jobs.push_back(std::async(std::launch::async, [&t, &v] {
        const detail::CompiledKernel k = detail::compile(v.p, t, v.sc);
        return k.cubin.size() > 4 && k.cubin.compare(0, 4, "\x7f" "ELF") == 0 ? std::string() : v.name;
      }));
    for (auto& j : jobs) {
      const std::string failed = j.get();
      CHECK_MESSAGE(failed.empty(), "no cubin for " << failed << " on " << arch);
      ++compiled;
    }
  }
  return compiled;
}

}  // namespace mxjit::test
