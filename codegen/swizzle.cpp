#include "codegen/swizzle.hpp"

#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit::detail {
namespace {

// Shared by both directions: the parameter block and the word -> (batch offset, r, c0) map.
// `ar` atom rows, `lines` 16-byte (128x4) or 4-byte (8x4) lines per atom.
constexpr const char* kCommon = R"(// mxjit {version}: {what} of u8 scales, {ar}x4 atoms. Generated; do not edit.
struct SwizzleParams {{
  unsigned long long linear, blocked;
  long long rank, words, rows_p, cols_p;
  long long shape[{max_rank}], stride[{max_rank}];
}};

// Blocked word w -> linear byte offset of (batch, r, c0) and r, c0 themselves.
__device__ __forceinline__ long long mx_word_place(const SwizzleParams& p, long long w, long long& r, long long& c0) {{
  const long long byte = w * 4;
  const long long slice = p.rows_p * p.cols_p;
  long long b = byte / slice;
  const long long rest = byte - b * slice;
  const long long atom = rest / {atom_bytes}, k = rest - atom * {atom_bytes};
  const long long atoms_per_row = p.cols_p / 4;
  const long long ar = atom / atoms_per_row, ac = atom - ar * atoms_per_row;
  r = ar * {ar} + ((k % {line_bytes}) / 4) * {lines} + k / {line_bytes};
  c0 = ac * 4;
  long long off = 0;
  for (int a = int(p.rank) - 3; a >= 0; --a) {{  // batch axes, row-major
    const long long e = p.shape[a];
    off += (b % e) * p.stride[a];
    b /= e;
  }}
  return off;
}}
)";

constexpr const char* kSwizzle = R"(
extern "C" __global__ void __launch_bounds__({threads}) {name}(const SwizzleParams p) {{
  const unsigned char* lin = reinterpret_cast<const unsigned char*>(p.linear);
  unsigned int* out = reinterpret_cast<unsigned int*>(p.blocked);
  const long long R = p.shape[p.rank - 2], C = p.shape[p.rank - 1];
  const long long sr = p.stride[p.rank - 2], sc = p.stride[p.rank - 1];
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < p.words;
       w += (long long)gridDim.x * blockDim.x) {{
    long long r, c0;
    const long long base = mx_word_place(p, w, r, c0);
    unsigned int word = 0;
    if (r < R)
      for (int j = 0; j < 4; ++j)
        if (c0 + j < C) word |= (unsigned int)lin[base + r * sr + (c0 + j) * sc] << (8 * j);
    out[w] = word;  // padding bytes are written as zero
  }}
}}
)";

constexpr const char* kUnswizzle = R"(
extern "C" __global__ void __launch_bounds__({threads}) {name}(const SwizzleParams p) {{
  unsigned char* lin = reinterpret_cast<unsigned char*>(p.linear);
  const unsigned int* in = reinterpret_cast<const unsigned int*>(p.blocked);
  const long long R = p.shape[p.rank - 2], C = p.shape[p.rank - 1];
  const long long sr = p.stride[p.rank - 2], sc = p.stride[p.rank - 1];
  for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < p.words;
       w += (long long)gridDim.x * blockDim.x) {{
    long long r, c0;
    const long long base = mx_word_place(p, w, r, c0);
    if (r >= R || c0 >= C) continue;  // a padding word
    const unsigned int word = in[w];
    for (int j = 0; j < 4; ++j)
      if (c0 + j < C) lin[base + r * sr + (c0 + j) * sc] = (unsigned char)(word >> (8 * j));
  }}
}}
)";

}  // namespace

SwizzleKernel generate_swizzle(const SwizzleSpec& spec) {
  if (spec.atom_rows != 128 && spec.atom_rows != 8)
    throw UsageError(fmt::format("swizzle kernel: atom {}x4 is not a scale layout; blocked128x4 and blocked8x4 are",
                                 spec.atom_rows));
  const int ar = spec.atom_rows;
  const int lines = ar >= 32 ? 32 : ar;
  const int line_bytes = 4 * (ar / lines);
  SwizzleKernel k;
  k.kernel_name = fmt::format("mxjit_{}_{}x4", spec.unswizzle ? "unswizzle" : "swizzle", ar);
  k.file_name = k.kernel_name + ".cu";
  k.source = fmt::format(fmt::runtime(kCommon), fmt::arg("version", kSwizzleGeneratorVersion),
                         fmt::arg("what", spec.unswizzle ? "unswizzle (blocked -> linear)" : "swizzle (linear -> blocked)"),
                         fmt::arg("ar", ar), fmt::arg("max_rank", kSwizzleMaxRank), fmt::arg("atom_bytes", ar * 4),
                         fmt::arg("line_bytes", line_bytes), fmt::arg("lines", lines));
  k.source += fmt::format(fmt::runtime(spec.unswizzle ? kUnswizzle : kSwizzle), fmt::arg("threads", kSwizzleThreads),
                          fmt::arg("name", k.kernel_name));
  return k;
}

}  // namespace mxjit::detail
