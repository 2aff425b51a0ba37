#pragma once
/// \file Block amax, per-block scales and element codes of scale / quantize nodes, from FP32
/// values already evaluated (and flushed, when the cast asks for it).
#include <cstdint>
#include <span>
#include <vector>

#include "dsl/ir.hpp"
#include "runtime/reference/blocking.hpp"

namespace mxjit::reference {

/// max |v| in FP32: NaN if any element is NaN, else the largest magnitude (Inf included);
/// 0 for no elements.
float amax_of(std::span<const float> values);

/// amax_of() of every block of `bp` (elements in no block are skipped).
std::vector<float> block_amaxes(std::span<const float> values, const BlockPartition& bp);

/// What a block's elements become.
enum class BlockMode : uint8_t {
  scaled,  ///< fp32(v * multiplier), then encoded
  zero,    ///< every element is +0 (E8M0 zero block; torchao NVFP4 with tensor amax 0)
  nan,     ///< every element is the format's NaN code (0x00 without NaN): E8M0 scale 0xFF
};

/// The scales of one scale node over one domain.
struct BlockScales {
  ScaleFormat format = ScaleFormat::e8m0;
  std::vector<uint8_t> bytes;      ///< E8M0 / E4M3 scale codes, one per block (row-major)
  std::vector<float> stored;       ///< FP32 scales (ScaleFormat::f32), one per block
  std::vector<float> multiplier;   ///< FP32 multiplier applied to the block's elements
  std::vector<BlockMode> mode;     ///< per block
};

/// Computes the scales of `scale` (an Op::scale node) from the values of its blocks.
BlockScales compute_scales(const Node& scale, std::span<const float> values, const BlockPartition& bp);

/// Encodes every domain element (row-major, one code per element, FP4 not yet packed) of
/// quantize node `q` with its block's scale. Elements in no block (past the last jagged group
/// end) get code 0x00.
std::vector<uint8_t> quantize_elements(const Node& q, std::span<const float> values, const BlockPartition& bp,
                                       const BlockScales& scales);

}  // namespace mxjit::reference
