// Launch checks, without a GPU: every bad binding is a UsageError naming the argument and rule.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dsl/errors.hpp"
#include "runtime/bindings.hpp"

using namespace mxjit;

namespace {

struct Fixture {
  Pipeline p;
  std::vector<uint8_t> xb = std::vector<uint8_t>(64 * 96 * 2 + 64), qb = std::vector<uint8_t>(64 * 96 + 64),
                       sb = std::vector<uint8_t>(64 * 3 + 64);
  TensorView x, q, s;
  Fixture() : p(make()) {
    x = TensorView::contiguous(xb.data(), DType::bf16, {64, 96});
    q = TensorView::strided(qb.data(), DType::u8, {64, 96}, {1, 64});  // col_major codes
    s = TensorView::contiguous(sb.data(), DType::u8, {64, 3});
  }
  static Pipeline make() {
    auto xx = input("x", DType::bf16, rank(2));
    auto sc = e8m0_scale(amax(blocks(xx, 1, 32)), e4m3, ScaleRule::rceil);
    return pipeline({output("q", cast(e4m3, xx / sc), layout::col_major()), output("s", sc)});
  }
  std::string error(std::vector<TensorView> in, std::vector<TensorView> out) {
    try {
      detail::check_bindings(p, in, out, DeviceKind::cpu);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST_CASE("a correct binding passes and yields the stride class") {
  Fixture f;
  detail::Binding b = detail::check_bindings(f.p, std::vector<TensorView>{f.x}, std::vector<TensorView>{f.q, f.s},
                                             DeviceKind::cpu);
  CHECK(b.shape == std::vector<int64_t>{64, 96});
  CHECK(b.unit_axis == std::vector<int>{1});
  CHECK_FALSE(b.empty);
}

TEST_CASE("bad bindings name the argument and the rule") {
  Fixture f;
  CHECK(f.error({}, {f.q, f.s}).find("0 inputs given but the pipeline takes 1") != std::string::npos);
  CHECK(f.error({f.x}, {f.q}).find("1 outputs given but the pipeline writes 2") != std::string::npos);
  TensorView bad = f.x;
  bad.dtype = DType::f16;
  CHECK(f.error({bad}, {f.q, f.s}).find("input 'x': dtype is f16 but the pipeline declares bf16") != std::string::npos);
  bad = f.x;
  bad.shape = {64, 96, 1};
  bad.strides = {96, 1, 1};
  CHECK(f.error({bad}, {f.q, f.s}).find("input 'x': rank is 3") != std::string::npos);
  TensorView q_rowmajor = TensorView::contiguous(f.qb.data(), DType::u8, {64, 96});
  CHECK(f.error({f.x}, {q_rowmajor, f.s}).find("output 'q': strides [96,1] do not match layout col_major") !=
        std::string::npos);
  TensorView s_small = TensorView::contiguous(f.sb.data(), DType::u8, {64, 2});
  CHECK(f.error({f.x}, {f.q, s_small}).find("output 's': shape [64,2] but row_major needs [64,3]") != std::string::npos);
  TensorView null_q = f.q;
  null_q.data = nullptr;
  CHECK(f.error({f.x}, {null_q, f.s}).find("output 'q': data pointer is null") != std::string::npos);
  TensorView overlap = TensorView::contiguous(f.qb.data() + 8, DType::u8, {64, 3});
  CHECK(f.error({f.x}, {f.q, overlap}).find("output 's': overlaps output 'q'") != std::string::npos);
  TensorView inplace = TensorView::strided(f.xb.data(), DType::u8, {64, 96}, {1, 64});
  CHECK(f.error({f.x}, {inplace, f.s}).find("overlaps input 'x'") != std::string::npos);
  TensorView on_gpu = f.x;
  on_gpu.device = DeviceKind::cuda;
  CHECK(f.error({on_gpu}, {f.q, f.s}).find("input 'x': is on cuda but this launch runs on cpu") != std::string::npos);
  TensorView negative = f.x;
  negative.strides = {0, 1};
  CHECK(f.error({negative}, {f.q, f.s}).find("stride 0 of axis 0 is not positive") != std::string::npos);
}

TEST_CASE("an empty domain is not an error and launches nothing") {
  Fixture f;
  TensorView x0 = TensorView::contiguous(f.xb.data(), DType::bf16, {0, 96});
  TensorView q0 = TensorView::strided(f.qb.data(), DType::u8, {0, 96}, {1, 1});
  TensorView s0 = TensorView::contiguous(f.sb.data(), DType::u8, {0, 3});
  detail::Binding b = detail::check_bindings(f.p, std::vector<TensorView>{x0}, std::vector<TensorView>{q0, s0},
                                             DeviceKind::cpu);
  CHECK(b.empty);
}

TEST_CASE("stride class: unit axis and 16-byte alignment") {
  Fixture f;
  TensorView colmajor = TensorView::strided(f.xb.data(), DType::bf16, {64, 96}, {1, 64});
  detail::Binding b = detail::check_bindings(f.p, std::vector<TensorView>{colmajor}, std::vector<TensorView>{f.q, f.s},
                                             DeviceKind::cpu);
  CHECK(b.unit_axis[0] == 0);
  TensorView sliced = TensorView::strided(f.xb.data(), DType::bf16, {32, 96}, {97, 1});
  TensorView q2 = TensorView::strided(f.qb.data(), DType::u8, {32, 96}, {1, 32});
  TensorView s2 = TensorView::contiguous(f.sb.data(), DType::u8, {32, 3});
  std::vector<uint8_t> big(97 * 32 * 2 + 64);
  sliced.data = big.data();
  b = detail::check_bindings(f.p, std::vector<TensorView>{sliced}, std::vector<TensorView>{q2, s2}, DeviceKind::cpu);
  CHECK(b.unit_axis[0] == 1);
  CHECK_FALSE(b.aligned[0]);  // a row stride of 194 bytes breaks 16-byte vectors
}
