// Lesson 8: another library's FP8 cast, bit for bit, as a scale definition.
//
// DeepSeek-style FP8 quantizes activations in 1x128 groups and weights in 128x128 tiles. Each
// library computes the FP32 scale with its own operations, and they disagree in the last bit:
// DeepGEMM's helper (run by PyTorch on the GPU) stores `max(amax, 1e-4) * fp32(1/448)`, vLLM's
// CUDA kernel `max(amax, 1e-10) / 448` and divides. A scale definition is those operations:
//
//     ScaleDef d;
//     d.stored = max(amax_var(), 1e-4) * double(1.0f / 448.0f);   // what the scale output holds
//     // d.factor defaults to 1 / stored_var(): the elements are x * fp32(1 / s)
//
// and dsl/peer_recipes.hpp has them ready. With power-of-two (UE8M0) scales the peers agree
// wherever the amax is above DeepGEMM's 1e-4 floor; with FP32 scales they do not.
// The K extent here (320) is not a multiple of 128: the last group of a row has 64 elements.
#include "dsl/peer_recipes.hpp"
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  const std::vector<int64_t> shape = {200, 320};
  auto x = input("x", DType::bf16, rank(2));
  auto cast_with = [&](const ScaleDef& d, Saturate sat, int64_t rows) {
    // 1x128 groups along K, or 128x128 tiles for the weights
    Blocks b = rows == 1 ? blocks(x, 1, 128) : blocks(x, {0, 1}, {128, 128});
    Scale s = scale(amax(b), e4m3, d);
    return pipeline({output("q", cast(e4m3, x / s, Round::nearest_even, sat)), output("s", s)});
  };
  std::vector<example::Host> in;
  in.push_back(example::random_bf16(shape, 8));

  auto dg = example::run_cpu(cast_with(recipes::deepgemm(e4m3, false), Saturate::none, 1), in, shape);
  auto vl = example::run_cpu(cast_with(recipes::vllm_group(e4m3, false), Saturate::finite, 1), in, shape);
  auto dg8 = example::run_cpu(cast_with(recipes::deepgemm(e4m3, true), Saturate::none, 1), in, shape);
  auto vl8 = example::run_cpu(cast_with(recipes::vllm_group(e4m3, true), Saturate::finite, 1), in, shape);
  auto tiles = example::run_cpu(cast_with(recipes::deepgemm(e4m3, false), Saturate::none, 128), in, shape);

  auto count_diff = [](const example::Host& a, const example::Host& b, size_t unit) {
    int n = 0;
    for (size_t i = 0; i < a.bytes.size(); i += unit) n += std::memcmp(&a.bytes[i], &b.bytes[i], unit) != 0;
    return n;
  };
  const size_t groups = dg[1].bytes.size() / 4;
  std::printf("1x128 groups: %zu; FP32 scales that differ, DeepGEMM vs vLLM: %d; FP8 bytes: %d of %zu\n", groups,
              count_diff(dg[1], vl[1], 4), count_diff(dg[0], vl[0], 1), dg[0].bytes.size());
  const int pow2_scales = count_diff(dg8[1], vl8[1], 4), pow2_bytes = count_diff(dg8[0], vl8[0], 1);
  std::printf("UE8M0 scales that differ: %d, FP8 bytes: %d\n", pow2_scales, pow2_bytes);
  std::printf("128x128 tiles: %zu scales, the first %a\n", tiles[1].bytes.size() / 4,
              double(reinterpret_cast<const float*>(tiles[1].bytes.data())[0]));
  // No group of this input has an amax below 1e-4: power-of-two scales agree everywhere.
  return pow2_scales == 0 && pow2_bytes == 0 && count_diff(dg[1], vl[1], 4) > 0 ? 0 : 1;
}
