// libFuzzer target: the short text form of a pipeline (dsl/text.hpp). Any input must either parse
// or throw UsageError; a parsed pipeline must print canonically and re-parse to the same hash.
#include <cstdint>
#include <optional>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <string_view>

#include "dsl/errors.hpp"
#include "dsl/text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<mxjit::Pipeline> p;
  try {
    p = mxjit::parse_pipeline(text);
  } catch (const mxjit::UsageError&) {
    return 0;  // a clean, located error is the expected outcome for most inputs
  }
  std::string canonical;
  try {
    canonical = mxjit::to_text(*p);
    const mxjit::Pipeline q = mxjit::parse_pipeline(canonical);
    if (!(q.hash() == p->hash()) || mxjit::to_text(q) != canonical) {
      std::fprintf(stderr, "round trip changed the pipeline:\n  %s\n", canonical.c_str());
      std::abort();
    }
  } catch (const mxjit::UsageError& e) {
    std::fprintf(stderr, "a parsed spec failed to print or re-parse: %s\n  canonical: %s\n", e.what(),
                 canonical.c_str());
    std::abort();
  }
  return 0;
}
