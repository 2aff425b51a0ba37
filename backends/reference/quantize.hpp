#pragma once
/// \file Block amax, per-block scales and element codes of scale / quantize nodes, from FP32
/// values already evaluated (and flushed, when the cast asks for it).
#include <cstdint>
#include <span>
#include <vector>

#include "dsl/ir.hpp"
#include "backends/reference/blocking.hpp"
#include "backends/reference/scale_expr.hpp"

namespace mxjit::reference {

/// max |v| in FP32: NaN if any element is NaN (AmaxNan::propagate; with ignore NaN elements are
/// skipped), else the largest magnitude (Inf included); 0 for no elements.
float amax_of(std::span<const float> values, AmaxNan nan = AmaxNan::propagate);

/// amax_of() of every block of `bp` (elements in no block are skipped).
std::vector<float> block_amaxes(std::span<const float> values, const BlockPartition& bp,
                                AmaxNan nan = AmaxNan::propagate);

/// The scales of one scale node over one domain.
struct BlockScales {
  ScaleFormat format = ScaleFormat::e8m0;
  std::vector<uint8_t> bytes;      ///< E8M0 / E4M3 scale codes, one per block (row-major)
  std::vector<float> stored;       ///< FP32 / bf16 scales (the value before rounding to bf16), one per block
  std::vector<float> multiplier;   ///< the factor the block's elements are multiplied (or divided) by
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
