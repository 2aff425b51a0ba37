// Generated-source goldens: the kernel text of fixed specs x arches, as readable files under
// tests/codegen/golden/<name>.<arch>.cu, so that a generator change shows as a diff in review.
// A change here changes every cache key: bump kGeneratorVersion with it. To accept a change:
//   MXJIT_UPDATE_GOLDEN=1 ./build/tests/test_codegen -tc='golden*'
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

#include "codegen/emit.hpp"
#include "dsl/text.hpp"
#include "runtime/compile.hpp"

using namespace mxjit;
using namespace mxjit::detail;
namespace fs = std::filesystem;

namespace {

struct Golden {
  const char* name;
  const char* spec;
  StrideClass sc;  // empty: the contiguous class
};

const Golden kGoldens[] = {
    {"dim0_e4m3", "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4", {}},
    {"dim0_e2m1", "bf16[2] -> mxfp4.e2m1 floor blocks(1,32)", {}},
    {"dim1_e4m3", "bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4", {}},
    {"dim1_e2m1", "bf16[2] -> mxfp4.e2m1 floor blocks(0,32) q:col_major", {}},
    {"dim0_dim1_e4m3", "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:blocked128x4 ; mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4", {}},
    {"expert3d_e4m3", "bf16[3] -> mxfp8.e4m3 rceil blocks(1,32) q:expert_col_major s:blocked128x4", {}},
    {"nvfp4_te", "bf16[2] -> nvfp4 s:blocked128x4", {}},
    {"jagged_fp8", "bf16[2] -> fp8.e4m3 groups(0,offs)", StrideClass{{1, 0}, {true, false}}},
    {"tiled_blocks2d", "bf16[2] -> mxfp8.e4m3 floor blocks(0,1,32x32)", {}},
    {"grouped_layout", "bf16[2] -> mxfp8.e4m3 rceil blocks(1,32) s:grouped_blocked128x4(0,offs)", StrideClass{{1, 0}, {true, false}}},
};

std::string read_file(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first line where `want` and `got` differ, with its neighbours, for the failure message.
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
    if (ea && eb) return "identical";
    if (ea != eb || la != lb)
      return fmt::format("line {}:\n  golden:    {}\n  generated: {}", line, ea ? "<end of file>" : la, eb ? "<end of file>" : lb);
  }
}

}  // namespace

TEST_CASE("golden generated sources (tests/codegen/golden; MXJIT_UPDATE_GOLDEN=1 rewrites them)") {
  const fs::path dir = MXJIT_GOLDEN_DIR;
  const char* update_env = std::getenv("MXJIT_UPDATE_GOLDEN");
  const bool update = update_env && std::string(update_env) == "1";
  int checked = 0;
  for (const Golden& g : kGoldens)
    for (const char* arch : {"sm_90a", "sm_100a"}) {
      const Pipeline p = parse_pipeline(g.spec);
      const StrideClass sc = g.sc.unit_axis.empty() ? default_stride_class(p) : g.sc;
      const std::string src = generate(p, Target::parse(arch), sc).source;
      const fs::path file = dir / fmt::format("{}.{}.cu", g.name, arch);
      CAPTURE(file.string());
      if (update) {
        std::ofstream(file, std::ios::binary) << src;
        MESSAGE("wrote " << file.string());
        continue;
      }
      REQUIRE_MESSAGE(fs::exists(file), "no golden file; MXJIT_UPDATE_GOLDEN=1 writes it");
      const std::string want = read_file(file);
      CHECK_MESSAGE(want == src, first_difference(want, src) << "\n(a deliberate change: MXJIT_UPDATE_GOLDEN=1 ./build/tests/test_codegen "
                                                               "-tc='golden*', bump kGeneratorVersion, commit the diff)");
      ++checked;
    }
  if (!update) CHECK(checked == 2 * int(std::size(kGoldens)));
}

TEST_CASE("generated sources carry no dead arithmetic: no shift by 0, no + 0, * 1, / 1, & 0, no constant if, no one-trip loop") {
  // The goldens' casts, and those whose emitters write packed words, shuffled scale words and
  // column-major runs: the places such terms came from.
  std::vector<std::pair<std::string, StrideClass>> casts;
  for (const Golden& g : kGoldens) casts.push_back({g.spec, g.sc});
  const StrideClass rows_unit{{1, 0}, {true, false}};
  for (const char* spec : {"bf16[2] -> fp8.e4m3 groups(0,offs) q:col_major", "f32[2] -> fp8.e5m2 groups(0,offs) q:col_major",
                           "bf16[2] -> fp8.e4m3 blocks(0,whole) q:col_major", "bf16[2] -> fp8.e4m3 blocks(0,whole)",
                           "bf16[2] -> fp8.e4m3 blocks(1,whole)", "bf16[2] -> mxfp8.e5m2 floor blocks(1,32) s:blocked128x4",
                           "bf16[2] -> fp8.e4m3 scale(stored=div(fmax(amax,1e-10),448), factor=stored, apply=divide, "
                           "clamp=ignore_nan(-448,448), amax_nan=ignore) blocks(1,128) q:row_major s:linear"})
    casts.push_back({spec, rows_unit});
  // ECMAScript: a literal 0 or 1 not followed by a fraction, a hex digit run or more digits.
  const std::regex dead(R"((<< 0u?\b(?![.x]))|([+|] 0u?\b(?![.x])(?! *:))|(\* 1u?\b(?![.x]))|(/ 1u?\b(?![.x]))|(& 0u?\b(?![.x]))|)"
                        R"((if \((true|false|1|0)\))|(for \(int (\w+) = 0; \9 < (\d+); \9 \+= \10\))|([=(] 0u? [+|] ))");
  int n = 0;
  for (const auto& c : casts)
    for (const char* arch : {"sm_90a", "sm_100a"}) {
      const std::string& spec = c.first;  // a local, not a binding: clang refuses those in CAPTURE
      const Pipeline p = parse_pipeline(spec);
      const StrideClass sc = c.second.unit_axis.empty() ? default_stride_class(p) : c.second;
      const std::string src = generate(p, Target::parse(arch), sc).source;
      std::smatch m;
      CAPTURE(spec);
      CAPTURE(arch);
      if (std::regex_search(src, m, dead)) {
        const size_t line = size_t(std::count(src.begin(), src.begin() + m.position(0), '\n')) + 1;
        FAIL_CHECK("dead term '" << m.str(0) << "' at line " << line);
      }
      ++n;
    }
  CHECK(n == 2 * int(casts.size()));
}
