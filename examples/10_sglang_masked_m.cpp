// Lesson 10: masked rows — SGLang's per_token_group_quant_8bit with masked_m.
//
// In DeepEP's low-latency MoE layout each expert gets a padded slab of T rows, of which only the
// first masked_m[e] hold tokens. The cast reads and writes those rows only; the rest of each slab
// keeps whatever its buffer held (SGLang allocates it with torch.empty). A mask says so:
//
//     x [E, T, K], masked_m [E] (int32)
//     s = scale(amax(blocks(x, 2, 128)), e4m3, recipes::sglang_group(e4m3, false))
//     pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::mn_major_tma())},
//              mask(1, 0, "masked_m"))        // along axis 1, counted per index of axis 0
//
//     e=0  t: R R R R R R R R        R: read, cast, written
//     e=1  t: . . . . . . . .        .: neither read nor written
//     e=2  t: R R R . . . . .
//
// The same cast without the mask gives the same bytes at every real row (checked below).
#include <cstring>

#include "dsl/peer_recipes.hpp"
#include "example_util.hpp"

int main() {
  using namespace mxjit;
  const int64_t E = 4, T = 64, K = 512;
  const int32_t masked_m[E] = {64, 0, 17, 40};
  auto outputs = [] {
    auto x = input("x", DType::bf16, rank(3));
    auto s = scale(amax(blocks(x, 2, 128)), e4m3, recipes::sglang_group(e4m3, false));
    return std::vector<Output>{output("q", cast(e4m3, x / s, Round::nearest_even, Saturate::finite)),
                               output("s", s, layout::mn_major_tma())};
  };
  const Pipeline masked = pipeline(outputs(), mask(1, 0, "masked_m"));
  const Pipeline plain = pipeline(outputs());
  std::vector<example::Host> in;
  in.push_back(example::random_bf16({E, T, K}, 10));
  in.emplace_back(DType::i32, std::vector<int64_t>{E});
  std::memcpy(in[1].bytes.data(), masked_m, sizeof(masked_m));
  const std::vector<example::Host> a = example::run(masked, in, {E, T, K});
  std::vector<example::Host> x_only;
  x_only.push_back(in[0]);
  x_only[0].view.data = x_only[0].bytes.data();
  const std::vector<example::Host> b = example::run_cpu(plain, x_only, {E, T, K});
  int64_t real = 0, kept = 0, wrong = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t k = 0; k < K; ++k) {
        const size_t i = size_t((e * T + t) * K + k);
        if (t < masked_m[e]) real += 1, wrong += a[0].bytes[i] != b[0].bytes[i];
        else kept += a[0].bytes[i] == 0xA5;
      }
  std::printf("%lld of %lld codes cast (%lld differ from the unmasked cast); %lld masked codes kept their 0xA5\n",
              (long long)real, (long long)(E * T * K), (long long)wrong, (long long)kept);
  return wrong == 0 && real + kept == E * T * K ? 0 : 1;
}
