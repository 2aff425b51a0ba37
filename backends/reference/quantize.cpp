#include "backends/reference/quantize.hpp"

#include <cmath>

#include "backends/reference/numerics.hpp"
#include "templates/mx_math.cuh"

namespace mxjit::reference {

float amax_of(std::span<const float> values, AmaxNan nan) {
  float m = 0.0f;
  for (float v : values) {
    if (std::isnan(v)) {
      if (nan == AmaxNan::propagate) return mx_qnan();
      continue;
    }
    m = std::max(m, std::fabs(v));
  }
  return m;
}

std::vector<float> block_amaxes(std::span<const float> values, const BlockPartition& bp, AmaxNan nan) {
  std::vector<float> m(size_t(bp.num_blocks), 0.0f);
  std::vector<bool> has_nan(size_t(bp.num_blocks), false);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t b = bp.block_of[i];
    if (b < 0) continue;
    if (std::isnan(values[i])) has_nan[size_t(b)] = true;
    else m[size_t(b)] = std::max(m[size_t(b)], std::fabs(values[i]));
  }
  if (nan == AmaxNan::propagate)
    for (size_t b = 0; b < m.size(); ++b)
      if (has_nan[b]) m[b] = mx_qnan();
  return m;
}

BlockScales compute_scales(const Node& scale, std::span<const float> values, const BlockPartition& bp) {
  const std::vector<float> amax = block_amaxes(values, bp, scale.amax_nan);
  const float tamax = tensor_amax_of(scale) ? amax_of(values, scale.amax_nan) : 0.0f;
  const size_t n = amax.size();
  BlockScales s;
  s.format = scale.scale_format;
  s.multiplier.resize(n);
  s.mode.resize(n);
  const bool bytes = scale.scale_format == ScaleFormat::e8m0 || scale.scale_format == ScaleFormat::e4m3;
  if (bytes) s.bytes.resize(n);
  else s.stored.resize(n);
  for (size_t b = 0; b < n; ++b) {
    const BlockScale bs = block_scale(scale, amax[b], tamax);
    if (bytes) s.bytes[b] = uint8_t(bs.bits);
    else s.stored[b] = bs.stored;
    s.multiplier[b] = bs.factor;
    s.mode[b] = bs.mode;
  }
  return s;
}

std::vector<uint8_t> quantize_elements(const Node& q, std::span<const float> values, const BlockPartition& bp,
                                       const BlockScales& scales) {
  const Node& scale = *q.args.at(1);
  std::vector<uint8_t> codes(values.size(), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t b = bp.block_of[i];
    if (b < 0) continue;
    switch (scales.mode[size_t(b)]) {
      case BlockMode::zero: codes[i] = 0x00; continue;
      case BlockMode::nan: codes[i] = nan_code(q.elem); continue;
      case BlockMode::scaled: break;
    }
    const float v = scale_element(scale, values[i], scales.multiplier[size_t(b)]);
    codes[i] = q.round == Round::stochastic ? encode_sr(q.elem, v, sr_random(q.seed, q.offset, uint64_t(i)))
                                            : encode_rne(q.elem, v, q.saturate);
  }
  return codes;
}

}  // namespace mxjit::reference
