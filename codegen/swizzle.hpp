#pragma once
/// \file CUDA source of the standalone scale swizzle / unswizzle kernels: linear [..., R, C] u8
/// scales <-> the blocked 128x4 / 8x4 GEMM scale layouts (dsl/layout.hpp), for scales produced
/// elsewhere. A byte permutation, one thread per 4-byte word of the blocked buffer:
///
///     blocked word w (bytes 4w..4w+3) = one row r of the atom, its 4 columns c0..c0+3
///
///       blocked buffer:  | atom (0,0) | atom (0,1) | ... | atom (1,0) | ...   (+ b*Rp*Cp per batch)
///       128x4 atom:      line l (16 bytes) = rows l, l+32, l+64, l+96, each 4 columns (1 word)
///       8x4 atom:        line l (4 bytes)  = row l, 4 columns (1 word)
///
///   swizzle:   thread w gathers the 4 linear bytes of (r, c0..c0+3), zero past R or C, and
///              stores one aligned 32-bit word: every blocked byte, padding included, is written.
///   unswizzle: thread w loads one aligned word and scatters the bytes with c < C (rows r < R)
///              to the linear view's strides; padding is not read back.
///
/// The kernels take one parameter block of 8-byte words (SwizzleParams, below) and need no
/// mxjit prelude; they are compiled by NVRTC and cached like pipeline kernels.
#include <cstdint>
#include <string>

namespace mxjit::detail {

/// Version of the swizzle generator; part of the disk-cache key.
inline constexpr const char* kSwizzleGeneratorVersion = "mxjit-swizzle-1";

/// Most linear-view axes the kernels take (batch axes + rows + columns).
inline constexpr int kSwizzleMaxRank = 8;

/// Which kernel.
struct SwizzleSpec {
  bool unswizzle = false;  ///< false: linear -> blocked; true: blocked -> linear
  int atom_rows = 128;     ///< 128 or 8 (the atom has 4 columns)
  bool tiled = false;      ///< swizzle to 128x4 by tiles through shared memory (kSwizzleTileCols)
  friend bool operator==(const SwizzleSpec&, const SwizzleSpec&) = default;
};

/// A generated kernel: source and entry point.
struct SwizzleKernel {
  std::string source;
  std::string kernel_name;  ///< e.g. "mxjit_swizzle_128x4"
  std::string file_name;    ///< e.g. "mxjit_swizzle_128x4.cu"
};

/// Parameter block layout (every field 8 bytes), as the generated `SwizzleParams` declares it:
///   linear, blocked (device addresses), rank, words (blocked words to cover),
///   rows_p, cols_p (padded R and C), shape[kSwizzleMaxRank], stride[kSwizzleMaxRank]
///   (the linear view's extents and strides in bytes, rows and columns last; unused slots 1 / 0).
inline constexpr int kSwizzleParamWords = 6 + 2 * kSwizzleMaxRank;

/// Threads per block of the generated kernels.
inline constexpr int kSwizzleThreads = 256;

/// Columns of a tile of the tiled 128x4 swizzle kernel: each CTA (kSwizzleThreads threads) reads
/// 128 rows x 32 columns of one batch slice, 16 bytes a thread, and writes the 8 atoms they fill
/// as 4 KiB in a row, 16 bytes a thread (the word kernel gathers each word's bytes from 4 rows):
///
///     linear rows r0..r0+127, columns c0..c0+31     blocked atoms (r0/128, c0/4 .. c0/4+7)
///       row r0     [ 32 bytes ]                 ->    atom a, line l (16 B) = rows l, l+32, l+64,
///       row r0+1   [ 32 bytes ]                       l+96 of columns c0+4a .. c0+4a+3
///       ...
///
/// Grid: x = ceil(cols_p / 32), y = rows_p / 128 (at most 65535), z = batch slices (a loop past 65535).
inline constexpr int kSwizzleTileCols = 32;

/// Generates the kernel for `spec`. Throws UsageError for an atom other than 128x4 or 8x4.
SwizzleKernel generate_swizzle(const SwizzleSpec& spec);

}  // namespace mxjit::detail
