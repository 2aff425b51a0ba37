#include "runtime/reference/quantize.hpp"

#include <cmath>

#include "runtime/reference/numerics.hpp"
#include "runtime/reference/scale_rules.hpp"
#include "templates/mx_math.cuh"

namespace mxjit::reference {

float amax_of(std::span<const float> values) {
  float m = 0.0f;
  for (float v : values) {
    if (std::isnan(v)) return mx_qnan();
    m = std::max(m, std::fabs(v));
  }
  return m;
}

std::vector<float> block_amaxes(std::span<const float> values, const BlockPartition& bp) {
  std::vector<float> m(size_t(bp.num_blocks), 0.0f);
  std::vector<bool> has_nan(size_t(bp.num_blocks), false);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t b = bp.block_of[i];
    if (b < 0) continue;
    if (std::isnan(values[i])) has_nan[size_t(b)] = true;
    else m[size_t(b)] = std::max(m[size_t(b)], std::fabs(values[i]));
  }
  for (size_t b = 0; b < m.size(); ++b)
    if (has_nan[b]) m[b] = mx_qnan();
  return m;
}

BlockScales compute_scales(const Node& scale, std::span<const float> values, const BlockPartition& bp) {
  const std::vector<float> amax = block_amaxes(values, bp);
  const size_t n = amax.size();
  BlockScales s;
  s.format = scale.scale_format;
  s.multiplier.resize(n);
  s.mode.assign(n, BlockMode::scaled);
  switch (scale.scale_format) {
    case ScaleFormat::e8m0: {
      s.bytes.resize(n);
      for (size_t b = 0; b < n; ++b) {
        const uint8_t byte = scale.rule == ScaleRule::custom
                                 ? e8m0_custom_byte(scale.args.at(1), scale.policy, amax[b])
                                 : e8m0_scale_byte(scale.rule, scale.policy, scale.elem, amax[b]);
        s.bytes[b] = byte;
        if (byte == 0xFF) s.mode[b] = BlockMode::nan;
        else if (amax[b] == 0) s.mode[b] = BlockMode::zero;
        else s.multiplier[b] = e8m0_multiplier(byte);
      }
      break;
    }
    case ScaleFormat::f32: {
      s.stored.resize(n);
      for (size_t b = 0; b < n; ++b) {
        const F32Scale f = f32_block_scale(scale.elem, amax[b], scale.pow2, scale.store_multiplier);
        s.multiplier[b] = f.multiplier;
        s.stored[b] = f.stored;
      }
      break;
    }
    case ScaleFormat::e4m3: {
      const float t = amax_of(values);
      s.bytes.resize(n);
      for (size_t b = 0; b < n; ++b) {
        const Nvfp4Block nb = nvfp4_block(scale.convention, amax[b], t);
        s.bytes[b] = nb.scale;
        s.multiplier[b] = nb.multiplier;
        if (nb.zero) s.mode[b] = BlockMode::zero;
      }
      break;
    }
  }
  return s;
}

std::vector<uint8_t> quantize_elements(const Node& q, std::span<const float> values, const BlockPartition& bp,
                                       const BlockScales& scales) {
  const Node& scale = *q.args.at(1);
  const bool torchao_clamp = scale.scale_format == ScaleFormat::e4m3 && scale.convention == Nvfp4Convention::torchao;
  const float limit = float(q.elem.max_normal());
  std::vector<uint8_t> codes(values.size(), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t b = bp.block_of[i];
    if (b < 0) continue;
    switch (scales.mode[size_t(b)]) {
      case BlockMode::zero: codes[i] = 0x00; continue;
      case BlockMode::nan: codes[i] = nan_code(q.elem); continue;
      case BlockMode::scaled: break;
    }
    float v = mx_fmul(values[i], scales.multiplier[size_t(b)]);
    if (torchao_clamp) v = mx_fmin_nan(mx_fmax_nan(v, -limit), limit);
    codes[i] = q.round == Round::stochastic ? encode_sr(q.elem, v, sr_random(q.seed, q.offset, uint64_t(i)))
                                            : encode_rne(q.elem, v);
  }
  return codes;
}

}  // namespace mxjit::reference
