#pragma once
/// \file Standalone swizzle / unswizzle of scales produced elsewhere: linear [..., R, C] u8
/// scales (E8M0 or E4M3 bytes) <-> a scale layout: the blocked GEMM scale layouts blocked_128x4 /
/// blocked_8x4, or any other (mn_major_tma_packed, a user's modes(...)).
///
///     linear [B.., R, C] (any strides)            blocked (1-D, B*Rp*Cp bytes, contiguous)
///     +----+----+----+---                         | atom(0,0) 512 B | atom(0,1) | ... |
///     | s00| s01| s02|         swizzle_scales     each atom: 128 rows x 4 columns, row r at
///     +----+----+----+---    ----------------->   line r%32, 4-byte group (r%128)/32;
///     | s10| s11| ...          unswizzle_scales   Rp = roundup(R,128), Cp = roundup(C,4),
///                            <-----------------   padding bytes zero
///
/// Byte placement is exactly the layout's offset (BoundLayout::offset) with rows = axis rank-2
/// and columns = axis rank-1, all leading axes `rest`. Host views run on the CPU for any layout;
/// CUDA views run a generated kernel (codegen/swizzle.hpp; blocked_128x4 and blocked_8x4)
/// compiled by NVRTC, cached on disk and in memory, enqueued on `stream`. Both views must be on
/// the same device.
#include <cstdint>
#include <span>

#include "dsl/layout.hpp"
#include "runtime/tensor.hpp"

namespace mxjit {

/// Bytes of the blocked buffer for linear scales of `shape` (rank >= 2) in `layout`, padding
/// included. Throws UsageError for a grouped layout, one that does not fit, or rank < 2.
int64_t swizzled_size(std::span<const int64_t> shape, const Layout& layout = Layout::blocked_128x4());

/// Writes `linear` (u8, rank 2..8, any non-negative strides) into `blocked` (u8, rank 1,
/// swizzled_size bytes, stride 1) in `layout`; every blocked byte is written (padding 0).
/// Throws UsageError naming the argument ('linear', 'blocked' or 'layout') and the rule broken
/// (dtype, rank, extent, strides, device, alignment of a CUDA 'blocked' to 4 bytes, overlap).
void swizzle_scales(const TensorView& linear, const TensorView& blocked, const Layout& layout = Layout::blocked_128x4(),
                    uint64_t stream = 0);

/// The inverse: reads `blocked` and writes every element of `linear` (padding is not read
/// back). Same checks as swizzle_scales.
void unswizzle_scales(const TensorView& blocked, const TensorView& linear,
                      const Layout& layout = Layout::blocked_128x4(), uint64_t stream = 0);

}  // namespace mxjit
