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

// The 128x4 swizzle by tiles (swizzle.hpp, kSwizzleTileCols). Shared-memory rows are 9 words apart,
// so the atom readers (rows l, l+32, l+64, l+96 of one column word) meet no bank twice.
constexpr const char* kSwizzleTiled = R"(
extern "C" __global__ void __launch_bounds__({threads}) {name}(const SwizzleParams p) {{
  __shared__ unsigned int tile[128 * 9];
  const unsigned char* lin = reinterpret_cast<const unsigned char*>(p.linear);
  unsigned char* out = reinterpret_cast<unsigned char*>(p.blocked);
  const long long R = p.shape[p.rank - 2], C = p.shape[p.rank - 1];
  const long long sr = p.stride[p.rank - 2], sc = p.stride[p.rank - 1];
  const long long atoms_per_row = p.cols_p / 4, slice = p.rows_p * p.cols_p;
  const int t = threadIdx.x, row = t >> 1, half = t & 1;  // load: 16 bytes of one row
  const int a = t >> 5, l = t & 31;                       // store: line l of atom a
  const long long r = (long long)blockIdx.y * 128 + row, c = (long long)blockIdx.x * 32 + half * 16;
  const long long atom_c = (long long)blockIdx.x * 8 + a;
  for (long long b = blockIdx.z; b * slice < p.words * 4; b += gridDim.z) {{
    long long base = 0;
    for (long long ax = p.rank - 3, rest = b; ax >= 0; --ax) {{  // batch axes, row-major
      base += (rest % p.shape[ax]) * p.stride[ax];
      rest /= p.shape[ax];
    }}
    unsigned int w[4] = {{0, 0, 0, 0}};  // zero past R and C
    if (r < R) {{
      const unsigned char* src = lin + base + r * sr + c * sc;
      if (sc == 1 && c + 16 <= C && ((unsigned long long)src & 15) == 0) {{
        const uint4 v = *reinterpret_cast<const uint4*>(src);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
      }} else {{
        for (int j = 0; j < 16 && c + j < C; ++j) w[j >> 2] |= (unsigned int)src[j * sc] << (8 * (j & 3));
      }}
    }}
    __syncthreads();  // the previous slice's stores have read the tile
#pragma unroll
    for (int j = 0; j < 4; ++j) tile[row * 9 + half * 4 + j] = w[j];
    __syncthreads();
    if (atom_c < atoms_per_row) {{
      const uint4 v = make_uint4(tile[l * 9 + a], tile[(l + 32) * 9 + a], tile[(l + 64) * 9 + a], tile[(l + 96) * 9 + a]);
      unsigned char* dst = out + b * slice + ((long long)blockIdx.y * atoms_per_row + atom_c) * 512 + l * 16;
      if (((unsigned long long)dst & 15) == 0) {{
        *reinterpret_cast<uint4*>(dst) = v;
      }} else {{
        unsigned int* d4 = reinterpret_cast<unsigned int*>(dst);
        d4[0] = v.x, d4[1] = v.y, d4[2] = v.z, d4[3] = v.w;
      }}
    }}
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
  if (spec.tiled && (spec.unswizzle || ar != 128))
    throw UsageError("swizzle kernel: the tiled kernel swizzles to blocked128x4 only");
  SwizzleKernel k;
  k.kernel_name = fmt::format("mxjit_{}_{}x4{}", spec.unswizzle ? "unswizzle" : "swizzle", ar, spec.tiled ? "_tiled" : "");
  k.file_name = k.kernel_name + ".cu";
  k.source = fmt::format(fmt::runtime(kCommon), fmt::arg("version", kSwizzleGeneratorVersion),
                         fmt::arg("what", spec.unswizzle ? "unswizzle (blocked -> linear)" : "swizzle (linear -> blocked)"),
                         fmt::arg("ar", ar), fmt::arg("max_rank", kSwizzleMaxRank), fmt::arg("atom_bytes", ar * 4),
                         fmt::arg("line_bytes", line_bytes), fmt::arg("lines", lines));
  const char* body = spec.tiled ? kSwizzleTiled : spec.unswizzle ? kUnswizzle : kSwizzle;
  k.source += fmt::format(fmt::runtime(body), fmt::arg("threads", kSwizzleThreads), fmt::arg("name", k.kernel_name));
  return k;
}

}  // namespace mxjit::detail
