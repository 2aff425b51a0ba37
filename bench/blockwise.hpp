#pragma once
/// \file The DeepSeek-style blockwise FP8 casts of DeepGEMM, vLLM, Transformer Engine and torchao
/// as `mxjit bench` rows (issue 34, "Speed"): each peer's scale definition (dsl/peer_recipes.hpp),
/// block shape and scale layout, at the shapes of DeepSeek-V3 (hidden size 7168). Every name
/// starts with "blockwise", so `mxjit bench --no-small --filter blockwise` runs exactly these;
/// tests/codegen/test_blockwise_bench.cpp generates and compiles each for sm_90a and sm_100a.
///
///     row                         blocks    scale definition        codes        scales
///     deepgemm sm90               1x128     deepgemm (FP32)         row-major    mn_major_tma
///     deepgemm sm100 packed       1x128     deepgemm ue8m0 (E8M0)   row-major    mn_major_tma_packed
///     vllm per_token_group        1x128     vllm_group (FP32)       row-major    row-major
///     deepgemm per_block          128x128   deepgemm (FP32)         row-major    row-major
///     te 1d dual                  1x128 +   transformer_engine      row-major +  mn_major_tma x 2
///                                 128x1     (pow2, FP32)            transposed   (GEMM_READY 1D)
///     te 2d                       128x128   transformer_engine      row-major    gemm_ready_2d
///     te 2d both usages           128x128   transformer_engine      row-major +  gemm_ready_2d +
///                                                                   transposed   gemm_ready_2d_t
///     torchao act_quant_lhs       1x128     torchao_blockwise       row-major    col-major
///     torchao weight_quant_rhs    128x128   torchao_blockwise       col-major    col-major
#include <functional>
#include <string>
#include <vector>

#include "dsl/peer_recipes.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::bench {

/// One bench row: its name, the pipeline and the (rows, cols) shape of the bf16 input.
struct BlockwiseCase {
  std::string name;
  std::function<Pipeline()> make;
  std::vector<int64_t> shape;
};

/// E4M3 codes of a bf16 matrix under `def` in 1x128 groups along the last axis (or 128x128 tiles),
/// codes in `q`, scales in `s`.
inline Pipeline blockwise_cast(const ScaleDef& def, Saturate sat, bool tiles, Layout q, Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  const Blocks b = tiles ? blocks(x, {0, 1}, {128, 128}) : blocks(x, 1, 128);
  auto sc = scale(amax(b), e4m3, def);
  return pipeline({output("q", cast(e4m3, x / sc, Round::nearest_even, sat), q), output("s", sc, s)});
}

/// Transformer Engine's Float8BlockScaling 1D quantizer with rowwise and columnwise usage: 1x128
/// groups with row-major codes, and 128x1 groups (1x128 of the transpose) with the codes
/// transposed, from one read of the input; both scale tensors GEMM_READY (MN-major, 4-aligned).
inline Pipeline te_dual_1d() {
  auto x = input("x", DType::bf16, rank(2));
  const ScaleDef d = recipes::transformer_engine(e4m3, true);
  auto sr = scale(amax(blocks(x, 1, 128)), e4m3, d);
  auto sc = scale(amax(blocks(x, 0, 128)), e4m3, d);
  return pipeline({output("q", cast(e4m3, x / sr)), output("s", sr, layout::mn_major_tma()),
                   output("q_t", cast(e4m3, x / sc), layout::col_major()), output("s_t", sc, layout::mn_major_tma())});
}

/// Transformer Engine's 2D (128x128) quantizer: GEMM_READY 2D scales; `both` adds the
/// columnwise usage (the codes transposed, the same scales transposed).
inline Pipeline te_2d(bool both) {
  auto x = input("x", DType::bf16, rank(2));
  auto s = scale(amax(blocks(x, {0, 1}, {128, 128})), e4m3, recipes::transformer_engine(e4m3, true));
  std::vector<Output> outs = {output("q", cast(e4m3, x / s)), output("s", s, layout::gemm_ready_2d())};
  if (both) {
    outs.push_back(output("q_t", cast(e4m3, x / s), layout::col_major()));
    outs.push_back(output("s_t", s, layout::gemm_ready_2d_t()));
  }
  return pipeline(std::move(outs));
}

/// SGLang's per_token_group_quant_8bit on x [E, T, K] (1x128 groups, FP32 scales MN-major and
/// TMA-aligned), with its masked_m (every row real: the bench's counts are the full extent) or
/// without: the mask's cost, one count read per row.
inline Pipeline sglang_experts(bool masked) {
  auto x = input("x", DType::bf16, rank(3));
  auto s = scale(amax(blocks(x, 2, 128)), e4m3, recipes::sglang_group(e4m3, false));
  std::vector<Output> outs = {output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma())};
  return masked ? pipeline(std::move(outs), mask(1, 0, "masked_m")) : pipeline(std::move(outs));
}

/// The rows, in the order the bench prints them.
inline std::vector<BlockwiseCase> blockwise_cases() {
  using L = Layout;
  const std::vector<int64_t> act = {16384, 7168}, act8k = {8192, 7168}, weight = {7168, 16384},
                             weight_t = {16384, 7168};
  auto deepgemm = [](bool tiles, bool packed) {
    ScaleDef d = recipes::deepgemm(e4m3, packed);
    if (packed) d.format = ScaleFormat::e8m0;
    return blockwise_cast(d, Saturate::none, tiles, L::row_major(),
                          tiles    ? L::linear()
                          : packed ? L::mn_major_tma_packed()
                                   : L::mn_major_tma());
  };
  std::vector<BlockwiseCase> v;
  for (const auto& s : {act, act8k})
    v.push_back({"blockwise deepgemm sm90 1x128 fp32 mn_major_tma", [=] { return deepgemm(false, false); }, s});
  for (const auto& s : {act, act8k})
    v.push_back({"blockwise deepgemm sm100 1x128 ue8m0 packed", [=] { return deepgemm(false, true); }, s});
  v.push_back({"blockwise vllm per_token_group 1x128 fp32",
               [] {
                 return blockwise_cast(recipes::vllm_group(e4m3, false), Saturate::finite, false, L::row_major(),
                                       L::linear());
               },
               act});
  for (const auto& s : {weight, weight_t})
    v.push_back({"blockwise deepgemm per_block 128x128 fp32", [=] { return deepgemm(true, false); }, s});
  v.push_back({"blockwise te 1d dual rowwise+transposed", [] { return te_dual_1d(); }, act});
  v.push_back({"blockwise te 2d 128x128 gemm_ready", [] { return te_2d(false); }, weight});
  v.push_back({"blockwise te 2d 128x128 both usages", [] { return te_2d(true); }, weight});
  v.push_back({"blockwise torchao act_quant_lhs 1x128",
               [] {
                 return blockwise_cast(recipes::torchao_blockwise(e4m3), Saturate::finite, false, L::row_major(),
                                       L::col_major());
               },
               act});
  v.push_back({"blockwise torchao weight_quant_rhs 128x128",
               [] {
                 return blockwise_cast(recipes::torchao_blockwise(e4m3), Saturate::finite, true, L::col_major(),
                                       L::col_major());
               },
               weight});
  return v;
}

}  // namespace mxjit::bench
