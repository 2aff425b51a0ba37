// The standalone swizzle kernels compile with NVRTC for sm_90a and sm_100a (no GPU needed) and
// are generated deterministically.
#include <doctest/doctest.h>

#include <string>

#include "codegen/swizzle.hpp"
#include "dsl/errors.hpp"
#include "runtime/nvrtc.hpp"

using namespace mxjit;
using namespace mxjit::detail;

TEST_CASE("swizzle kernels compile for sm_90a and sm_100a") {
  // Generates `spec` twice (deterministic), checks its name and compiles it for `arch`.
  auto compiles = [](const SwizzleSpec& spec, const char* arch, const std::string& name) {
    const SwizzleKernel k = generate_swizzle(spec);
    INFO(k.kernel_name << " " << arch);
    CHECK(k.kernel_name == name);
    CHECK(generate_swizzle(spec).source == k.source);
    NvrtcRequest req;
    req.source = k.source;
    req.file_name = k.file_name;
    req.arch = arch;
    NvrtcOutput out;
    REQUIRE_NOTHROW(out = nvrtc_compile(req));
    CHECK(!out.cubin.empty());
  };
  for (const char* arch : {"sm_90a", "sm_100a"}) {
    for (bool un : {false, true})
      for (int ar : {128, 8})
        compiles({un, ar}, arch, (un ? "mxjit_unswizzle_" : "mxjit_swizzle_") + std::to_string(ar) + "x4");
    compiles({false, 128, true}, arch, "mxjit_swizzle_128x4_tiled");
  }
  CHECK_THROWS_AS(generate_swizzle({true, 128, true}), UsageError);
  CHECK_THROWS_AS(generate_swizzle({false, 8, true}), UsageError);
  CHECK(generate_swizzle({false, 128}).source != generate_swizzle({false, 8}).source);
  CHECK_THROWS_AS(generate_swizzle({false, 64}), UsageError);
}
