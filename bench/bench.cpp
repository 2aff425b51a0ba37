#include "bench/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <random>

#include "bench/blockwise.hpp"
#include "mxjit/mxjit.hpp"
#include "runtime/driver.hpp"

namespace mxjit::bench {
namespace {

// A benchmark case: a pipeline, the domain shape, and how the input is laid out.
struct Case {
  std::string name;
  std::function<Pipeline()> make;
  std::vector<int64_t> shape;
  /// expert_col_major: rank 3 (E, K, N) with K unit-stride, as MoE expert weights B_t are stored.
  enum class Input { row_major, col_major, sliced, expert_col_major } input = Input::row_major;
  std::vector<int64_t> check_shape;  // small shape checked against the reference first
  int64_t group_align = 1;           // group ends a multiple of this (K groups: the block size)
  bool synced = false;               // each launch timed alone: the small sweep's launch latency
  int groups = 16;                   // jagged groups an offsets input splits its axis into
};

Pipeline cast(int axis, ElemFormat f, ScaleRule rule, Layout q, Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = e8m0_scale(amax(blocks(x, axis, 32)), f, rule);
  return pipeline({output("q", mxjit::cast(f, x / sc), q), output("s", sc, s)});
}
// An E4M3 RCEIL cast along `axis` whose scales are grouped_blocked_128x4 by groups along axis 0
// (1: dim0 with token groups; 0: dim1 with K groups).
Pipeline grouped_cast(int axis) {
  return cast(axis, e4m3, ScaleRule::rceil, axis == 1 ? layout::row_major() : layout::col_major(),
              layout::grouped_blocked_128x4(offsets("offs"), 0));
}
Pipeline fused(Layout s) {
  auto x = input("x", DType::bf16, rank(2));
  auto s0 = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  auto s1 = e8m0_scale(amax(blocks(x, 0, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q0", mxjit::cast(e4m3, x / s0)), output("s0", s0, s),
                   output("q1", mxjit::cast(e4m3, x / s1), layout::col_major()), output("s1", s1, s)});
}
Pipeline expert(Layout s) {
  auto x = input("x", DType::bf16, rank(3));
  auto sc = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", mxjit::cast(e4m3, x / sc), layout::expert_col_major()), output("s", sc, s)});
}
// Fused prologue + MXFP8 cast, and the unfused first half (prologue -> bf16) to compare with.
Pipeline prologue(const std::string& kind, bool fuse) {
  auto x = input("x", DType::bf16, rank(2));
  Expr v = x;
  if (kind == "swiglu") v = swiglu(x, input("up", DType::bf16, rank(2)));
  else if (kind == "vec") v = x * vec("w", DType::bf16, 1, rank(2));
  else v = gelu(x, Gelu::tanh);
  if (!fuse) return pipeline({output("y", v, DType::bf16)});
  auto sc = e8m0_scale(amax(blocks(v, 1, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", mxjit::cast(e4m3, v / sc)), output("s", sc)});
}
Pipeline format_cast(ElemFormat f) {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = e8m0_scale(amax(blocks(x, 1, 32)), f, ScaleRule::rceil);
  return pipeline({output("q", mxjit::cast(f, x / sc)), output("s", sc)});
}
Pipeline nvfp4(Nvfp4Convention c) {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = nvfp4_scale(amax(blocks(x, 1, 16)), c);
  return pipeline({output("q", mxjit::cast(e2m1, x / sc)), output("s", sc, layout::blocked_128x4())});
}
Pipeline sr_cast() {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  CastOptions o;
  o.seed = 42;
  return pipeline({output("q", mxjit::cast(e4m3, x / sc, Round::stochastic, Saturate::finite, o)), output("s", sc)});
}
Pipeline blocks2d() {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = e8m0_scale(amax(blocks(x, {0, 1}, {32, 32})), e4m3, ScaleRule::floor);
  return pipeline({output("q", mxjit::cast(e4m3, x / sc)), output("q_t", mxjit::cast(e4m3, x / sc), layout::col_major()),
                   output("s", sc)});
}
// Per-group column scales of MoE token groups; `cm`: torchao's MoE weight-gradient form (codes
// column-major, the multiplier rounded to a power of two).
Pipeline per_group_colwise(bool cm = false) {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = f32_scale(amax(groups(x, 0, offsets("offs"))), e4m3, F32ScaleOptions{cm, cm});
  return pipeline({output("q", mxjit::cast(e4m3, x / sc), cm ? layout::col_major() : layout::row_major()), output("s", sc)});
}
// Per-group row scales over jagged groups of columns (torchao's per-group rowwise cast).
Pipeline per_group_rowwise() {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = f32_scale(amax(groups(x, 1, offsets("offs"))), e4m3, F32ScaleOptions{true, true});
  return pipeline({output("q", mxjit::cast(e4m3, x / sc)), output("s", sc)});
}
// torchao's Float8 rowwise cast (one FP32 multiplier per whole line along `axis`, power-of-two
// rounded as its MoE training recipe does).
Pipeline whole_axis(int axis, int r = 2, Layout q = layout::row_major()) {
  auto x = input("x", DType::bf16, rank(r));
  auto sc = f32_scale(amax(blocks(x, axis, kWholeAxis)), e4m3, {true, true});
  return pipeline({output("q", mxjit::cast(e4m3, x / sc), q), output("s", sc)});
}
// torchao's Float8 tensorwise cast (one FP32 multiplier for the whole tensor, not rounded). A
// tensor-amax pre-pass reads the input first, so the input is read twice: 5 bytes of traffic per
// bf16 element against the 3 the row's GB/s counts, at most 60% of copy.
Pipeline tensorwise() {
  auto x = input("x", DType::bf16, rank(2));
  auto sc = f32_scale(amax(blocks(x, {0, 1}, {kWholeAxis, kWholeAxis})), e4m3, {true, false});
  return pipeline({output("q", mxjit::cast(e4m3, x / sc)), output("s", sc)});
}
Pipeline dequant() {
  Expr d = dequantize("q", "s", e4m3, ScaleFormat::e8m0, rank(2), 1, 32);
  return pipeline({output("y", d, DType::bf16)});
}

std::vector<Case> cases(const BenchOptions& o) {
  std::vector<Case> c;
  const std::vector<std::vector<int64_t>> big = {{16384, 16384}, {16640, 5120}, {8192, 5120}};
  auto add = [&](std::string name, std::function<Pipeline()> make, std::vector<int64_t> shape,
                 Case::Input in = Case::Input::row_major, int64_t group_align = 1) {
    std::vector<int64_t> small = shape.size() == 3 ? std::vector<int64_t>{2, 96, 160} : std::vector<int64_t>{130, 224};
    c.push_back(Case{std::move(name), std::move(make), std::move(shape), in, small, group_align});
  };
  if (o.large) {
    for (const auto& s : big) {
      add("dim0 e4m3 rceil linear", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()); }, s);
      add("dim0 e4m3 rceil blocked", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4()); }, s);
      // MoE token groups: each group's scales a whole 128x4-blocked matrix at a padded start.
      add(
          "dim0 e4m3 rceil M-group blocked G=16", [] { return grouped_cast(1); }, s);
      // K groups (the weight gradient's token axis): dim1 blocks, group ends multiples of 32.
      add(
          "dim1 e4m3 rceil K-group blocked G=16", [] { return grouped_cast(0); }, s, Case::Input::row_major, 32);
      add("dim0 e4m3 floor linear", [] { return cast(1, e4m3, ScaleRule::floor, layout::row_major(), layout::linear()); }, s);
      add("dim1 e4m3 rceil linear", [] { return cast(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear()); }, s);
      add("dim1 e4m3 rceil blocked", [] { return cast(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4()); }, s);
      add("dim0+dim1 linear", [] { return fused(layout::linear()); }, s);
      add("dim0+dim1 blocked", [] { return fused(layout::blocked_128x4()); }, s);
      add("dim0 mxfp4 e2m1 floor", [] { return cast(1, e2m1, ScaleRule::floor, layout::row_major(), layout::linear()); }, s);
      add("dequant mxfp8->bf16", [] { return dequant(); }, s);
    }
    const std::vector<int64_t> sq = {16384, 16384};
    for (const char* k : {"swiglu", "vec", "gelu"}) {
      add(std::string("fused ") + k + "+mxfp8", [k] { return prologue(k, true); }, sq);
      add(std::string("unfused ") + k + "->bf16", [k] { return prologue(k, false); }, sq);
    }
    add("fp8 per-group colwise G=16", [] { return per_group_colwise(); }, sq);
    for (const auto& s : big) add("fp8 rowwise (whole rows)", [] { return whole_axis(1); }, s);
    for (const auto& s : big) add("fp8 colwise (whole columns)", [] { return whole_axis(0); }, s);
    for (const auto& s : std::vector<std::vector<int64_t>>{{16384, 16384}, {8192, 5120}})
      add(
          "tensorwise FP8 E4M3 (f32 multiplier; input read twice, <= 60% of copy)", [] { return tensorwise(); }, s);
    // torchao's MoE expert weights B_t (E, K, N), K unit-stride: colwise over K (codes in B_t's
    // layout) and the transposed rowwise over N (codes along N).
    add("fp8 3-D colwise (whole K)", [] { return whole_axis(1, 3, layout::permuted({0, 2, 1})); }, {16, 5120, 8192},
        Case::Input::expert_col_major);
    // Short whole axes too (torchao's MoE tests: N = 512 and 128).
    for (const auto& s : std::vector<std::vector<int64_t>>{{16, 5120, 8192}, {16, 5120, 512}, {64, 5120, 128}})
      add("fp8 3-D transposed rowwise (whole N)", [] { return whole_axis(2, 3); }, s, Case::Input::expert_col_major);
    // The same kernel on contiguous inputs (lines along N unit-stride, K whole, codes along K),
    // where a schedule applies exactly: what `--schedule` tunes for the transposed rowwise.
    for (const auto& s : std::vector<std::vector<int64_t>>{{16, 8192, 5120}, {16, 512, 5120}, {64, 128, 5120}})
      add("fp8 3-D across, codes along whole K", [] { return whole_axis(1, 3, layout::permuted({0, 2, 1})); }, s);
    add("fp8 per-group colwise G=16", [] { return per_group_colwise(); }, {16640, 5120});
    add("fp8 per-group colwise G=64", [] { return per_group_colwise(); }, {16384, 5120});  // E=64: ~256 rows a group
    c.back().groups = 64;
    for (const auto& s : std::vector<std::vector<int64_t>>{{16640, 5120}, {16640, 8192}})
      add("fp8 per-group colwise G=16 col-major pow2", [] { return per_group_colwise(true); }, s);
    // The E=64 step's dual cast (about 256 rows a group), and 4 groups of about 4,100 rows (past
    // the row cache).
    for (const auto& s : std::vector<std::vector<int64_t>>{{16384, 5120}, {16384, 8192}}) {
      add(
          "fp8 per-group colwise G=64 col-major pow2", [] { return per_group_colwise(true); }, s);
      c.back().groups = 64;
    }
    add("fp8 per-group colwise G=4 col-major pow2", [] { return per_group_colwise(true); }, {16384, 5120});
    c.back().groups = 4;
    // 32 groups of about 512 rows: the small groups' kernel near its cache's 580 rows.
    add("fp8 per-group colwise G=32 col-major pow2", [] { return per_group_colwise(true); }, {16384, 5120});
    c.back().groups = 32;
    add("fp8 per-group rowwise G=16 (jagged columns) pow2", [] { return per_group_rowwise(); }, {16640, 5120});
    add("mxfp6 e2m3 dim0", [] { return format_cast(e2m3); }, sq);
    add("mxfp6 e3m2 dim0", [] { return format_cast(e3m2); }, sq);
    add("mxint8 dim0", [] { return format_cast(int8); }, sq);
    add("nvfp4 te dim0 blocked", [] { return nvfp4(Nvfp4Convention::te); }, sq);
    add("nvfp4 torchao dim0 blocked", [] { return nvfp4(Nvfp4Convention::torchao); }, sq);
    add("stochastic rounding e4m3", [] { return sr_cast(); }, sq);
    add("2-D 32x32 blocks, both copies", [] { return blocks2d(); }, sq);
    add("dim0 col-major input", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()); },
        {16384, 16384}, Case::Input::col_major);
    add("dim1 col-major input", [] { return cast(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear()); },
        {16384, 16384}, Case::Input::col_major);
    add("dim0 sliced input", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()); },
        {16384, 8192}, Case::Input::sliced);
    for (int64_t e : {1, 4, 16, 64}) {
      add("3-D expert col-major linear", [] { return expert(layout::linear()); }, {e, 8192, 5120});
      add("3-D expert col-major blocked", [] { return expert(layout::blocked_128x4()); }, {e, 8192, 5120});
    }
    // The peers' blockwise FP8 casts (bench/blockwise.hpp; `--filter blockwise`).
    for (const BlockwiseCase& b : blockwise_cases()) add(b.name, b.make, b.shape);
    for (bool masked : {false, true})  // DeepEP's low-latency slabs: 8 experts x 2048 rows
      add(masked ? "sglang 1x128 experts, masked_m (all rows real)" : "sglang 1x128 experts",
          [=] { return sglang_experts(masked); }, {8, 2048, 7168});
    add("dim0 tail 16383x5119", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()); }, {16383, 5119});
  }
  if (o.small_sweep)
    for (int64_t n : {128, 256, 512, 1024, 2048}) {
      add("small dim0 e4m3", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4()); }, {n, n});
      c.back().synced = true;
    }
  if (!o.filter.empty())
    c.erase(std::remove_if(c.begin(), c.end(), [&](const Case& k) { return k.name.find(o.filter) == std::string::npos; }), c.end());
  return c;
}

// A cast timed against a baseline in one interleaved loop (bench_pair).
struct Pair {
  std::string name;                      // "dim0: blocked vs linear"
  std::function<Pipeline()> make, base;  // the case and its baseline
  std::vector<int64_t> shape;
};

// Blocked scales against linear ones (issue: at most 3% more), and for calibration two casts
// that differ only in the scale rule (FLOOR runs 2.7% more instructions than RCEIL at 16640 x
// 5120): what a few percent of instructions cost where a cast is not purely memory-bound.
std::vector<Pair> pairs(const BenchOptions& o) {
  std::vector<Pair> v;
  if (!o.large) return v;
  for (const std::vector<int64_t>& s : {std::vector<int64_t>{16384, 16384}, {16640, 5120}, {8192, 5120}}) {
    v.push_back({"pair dim0: blocked vs linear", [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::blocked_128x4()); },
                 [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()); }, s});
    v.push_back({"pair dim1: blocked vs linear", [] { return cast(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::blocked_128x4()); },
                 [] { return cast(0, e4m3, ScaleRule::rceil, layout::col_major(), layout::linear()); }, s});
    v.push_back({"pair dim0+dim1: blocked vs linear", [] { return fused(layout::blocked_128x4()); },
                 [] { return fused(layout::linear()); }, s});
    v.push_back({"pair calibration: floor vs rceil", [] { return cast(1, e4m3, ScaleRule::floor, layout::row_major(), layout::linear()); },
                 [] { return cast(1, e4m3, ScaleRule::rceil, layout::row_major(), layout::linear()); }, s});
  }
  v.push_back({"pair 3-D: blocked vs linear", [] { return expert(layout::blocked_128x4()); }, [] { return expert(layout::linear()); },
               {16, 8192, 5120}});
  if (!o.filter.empty())
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Pair& k) { return k.name.find(o.filter) == std::string::npos; }), v.end());
  return v;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

// Device tensors of a binding: inputs (rotating copies) and outputs.
struct Bound {
  std::vector<DeviceBuffer> in_bufs, out_bufs;
  std::vector<std::vector<TensorView>> inputs;  // per rotation
  std::vector<TensorView> outputs;
  double bytes = 0;
  int64_t groups = 0;
};

// Random, never-zero-everywhere bytes: bf16 normals, or random codes/scales for dequant inputs.
void fill_random(DeviceBuffer& b, DType dt, uint32_t seed, bool scales) {
  const size_t chunk = std::min<size_t>(b.bytes(), size_t(32) << 20);
  std::vector<uint8_t> host(chunk);
  std::mt19937 rng(seed);
  if (dt == DType::bf16) {
    std::normal_distribution<float> d(0.0f, 2.0f);
    for (size_t i = 0; i + 1 < chunk; i += 2) {
      float f = d(rng);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      host[i] = uint8_t(u >> 16);
      host[i + 1] = uint8_t(u >> 24);
    }
  } else {
    for (auto& x : host) x = scales ? uint8_t(110 + rng() % 30) : uint8_t(rng() & 0x7e);
  }
  for (size_t off = 0; off < b.bytes(); off += chunk) {
    size_t n = std::min(chunk, b.bytes() - off);
    auto& drv = detail::Driver::get();
    drv.check(drv.cuMemcpyHtoD_v2(CUdeviceptr(b.ptr() + off), host.data(), n), "cuMemcpyHtoD");
  }
}

Bound bind_case(const Pipeline& p, const std::vector<int64_t>& shape, const Case& c, int rotations) {
  const Case::Input in_kind = c.input;
  Bound b;
  b.inputs.resize(size_t(rotations));
  for (size_t k = 0; k < p.inputs().size(); ++k) {
    const InputDecl& d = p.inputs()[k];
    std::vector<int64_t> s = shape;
    if (d.kind == InputDecl::Kind::scales) s.back() = (s.back() + 31) / 32;
    if (d.kind == InputDecl::Kind::vector) s = {shape[size_t(d.axis)]};
    if (d.kind == InputDecl::Kind::counts) {  // masked rows: every row real (the mask's cost alone)
      const std::vector<int32_t> counts(static_cast<size_t>(shape[size_t(d.axis)]), int32_t(shape[size_t(p.mask().axis)]));
      for (int r = 0; r < rotations; ++r) {
        b.in_bufs.push_back(DeviceBuffer::alloc(counts.size() * 4));
        b.in_bufs.back().upload(counts.data(), counts.size() * 4);
        b.inputs[size_t(r)].push_back(TensorView::contiguous(reinterpret_cast<void*>(b.in_bufs.back().ptr()), DType::i32,
                                                            {int64_t(counts.size())}, DeviceKind::cuda));
      }
      continue;
    }
    if (d.kind == InputDecl::Kind::offsets) {
      // c.groups jagged groups of uneven sizes (one empty) covering the axis: MoE token groups.
      const int64_t n = shape[size_t(d.axis)], G = c.groups;
      std::vector<int32_t> ends(static_cast<size_t>(G));
      int64_t acc = 0;
      for (int64_t g = 0; g < G; ++g) {
        acc += g == 5 ? 0 : std::max<int64_t>(0, (n / G) + (g % 3 == 0 ? 17 : -9));
        ends[size_t(g)] = int32_t(std::min<int64_t>(std::max<int64_t>(acc, 0), n) / c.group_align * c.group_align);
      }
      ends[size_t(G) - 1] = int32_t(n);
      for (int r = 0; r < rotations; ++r) {
        b.in_bufs.push_back(DeviceBuffer::alloc(size_t(G) * 4));
        b.in_bufs.back().upload(ends.data(), size_t(G) * 4);
        b.inputs[size_t(r)].push_back(
            TensorView::contiguous(reinterpret_cast<void*>(b.in_bufs.back().ptr()), DType::i32, {G}, DeviceKind::cuda));
      }
      b.groups = G;
      continue;
    }
    std::vector<int64_t> strides(s.size(), 1);
    for (int a = int(s.size()) - 2; a >= 0; --a) strides[size_t(a)] = strides[size_t(a) + 1] * s[size_t(a) + 1];
    int64_t span = numel(s);
    if (in_kind == Case::Input::col_major && s.size() == 2) {
      strides = {1, s[0]};
    } else if (in_kind == Case::Input::expert_col_major && s.size() == 3) {
      strides = {s[1] * s[2], 1, s[1]};
    } else if (in_kind == Case::Input::sliced && s.size() == 2) {
      strides = {2 * s[1], 1};  // every row of a twice-as-wide tensor, half of each row
      span = 2 * numel(s);
    }
    for (int r = 0; r < rotations; ++r) {
      b.in_bufs.push_back(DeviceBuffer::alloc(size_t(span) * dtype_size(d.dtype)));
      fill_random(b.in_bufs.back(), d.dtype, uint32_t(17 * k + r), d.kind == InputDecl::Kind::scales);
      b.inputs[size_t(r)].push_back(TensorView::strided(reinterpret_cast<void*>(b.in_bufs.back().ptr()), d.dtype, s,
                                                         strides, DeviceKind::cuda));
    }
    b.bytes += double(numel(s)) * double(dtype_size(d.dtype));
  }
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    OutputGeometry g = output_geometry(p, int(o), shape, b.groups);
    b.out_bufs.push_back(DeviceBuffer::alloc(size_t(g.storage_bytes)));
    b.outputs.push_back(TensorView::strided(reinterpret_cast<void*>(b.out_bufs.back().ptr()), p.outputs()[o].dtype,
                                            g.view_shape, g.view_strides, DeviceKind::cuda));
    b.bytes += double(g.storage_bytes);
  }
  return b;
}

// Runs the case's kernel on its small check shape and compares every byte with the reference,
// twice: the outputs are poisoned first with 0xA5, then with 0x5A, and the reference starts from
// the same byte. A byte the kernel fails to write then differs in at least one of the two runs
// (fresh device memory may well hold an earlier run's correct results).
bool check_small(const Kernel& k, const Case& c) {
  const Pipeline& p = k.pipeline();
  Bound b = bind_case(p, c.check_shape, c, 1);
  std::vector<std::vector<uint8_t>> in_host;
  std::vector<TensorView> in_views;
  for (size_t i = 0; i < b.inputs[0].size(); ++i) {
    const TensorView& v = b.inputs[0][i];
    in_host.emplace_back(b.in_bufs[i].bytes());
    b.in_bufs[i].download(in_host.back().data(), in_host.back().size());
    TensorView h = v;
    h.data = in_host.back().data();
    h.device = DeviceKind::cpu;
    in_views.push_back(h);
  }
  for (const uint8_t poison : {uint8_t(0xA5), uint8_t(0x5A)}) {
    for (DeviceBuffer& buf : b.out_bufs) buf.fill(poison);
    k(0, b.inputs[0], b.outputs);
    Stream::null().synchronize();
    std::vector<std::vector<uint8_t>> ref(b.outputs.size()), got(b.outputs.size());
    std::vector<TensorView> ref_views;
    for (size_t o = 0; o < b.outputs.size(); ++o) {
      ref[o].assign(b.out_bufs[o].bytes(), poison);
      got[o].resize(b.out_bufs[o].bytes());
      b.out_bufs[o].download(got[o].data(), got[o].size());
      TensorView h = b.outputs[o];
      h.data = ref[o].data();
      h.device = DeviceKind::cpu;
      ref_views.push_back(h);
    }
    reference::run(p, in_views, ref_views);
    if (ref != got) return false;
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

double copy_bandwidth() {
  const size_t n = size_t(2) << 30;
  DeviceBuffer a = DeviceBuffer::alloc(n), b = DeviceBuffer::alloc(n);
  a.fill(1);
  auto& drv = detail::Driver::get();
  std::vector<double> t;
  for (int i = 0; i < 12; ++i) {
    EventTimer ev;
    ev.record_start();
    drv.check(drv.cuMemcpyDtoD_v2(CUdeviceptr(b.ptr()), CUdeviceptr(a.ptr()), n), "cuMemcpyDtoD");
    ev.record_stop();
    if (i >= 2) t.push_back(ev.elapsed_ms());
  }
  return 2.0 * double(n) / (median(t) * 1e-3) / 1e9;
}

namespace {

void write_files(const std::string& prefix, const std::vector<BenchRow>& rows, const std::string& gpu) {
  std::ofstream csv(prefix + ".csv");
  csv << "case,shape,us,GBps,pct_copy,bytes,checked,base_us,vs_base_pct\n";
  for (const BenchRow& r : rows)
    csv << fmt::format("\"{}\",\"{}\",{:.2f},{:.1f},{:.1f},{:.0f},{},{}\n", r.name, r.shape, r.us, r.gbps, r.pct_copy,
                       r.bytes, r.checked, r.base_us > 0 ? fmt::format("{:.2f},{:.2f}", r.base_us, r.vs_base_pct) : ",");
  std::ofstream js(prefix + ".json");
  js << "{\n  \"gpu\": \"" << gpu << "\",\n  \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i)
    js << fmt::format("    {{\"case\": \"{}\", \"shape\": \"{}\", \"us\": {:.2f}, \"GBps\": {:.1f}, \"pct_copy\": {:.1f}, "
                      "\"checked\": {}{}}}{}\n",
                      rows[i].name, rows[i].shape, rows[i].us, rows[i].gbps, rows[i].pct_copy, rows[i].checked,
                      rows[i].base_us > 0 ? fmt::format(", \"base_us\": {:.2f}, \"vs_base_pct\": {:.2f}", rows[i].base_us, rows[i].vs_base_pct) : "",
                      i + 1 < rows.size() ? "," : "");
  js << "  ]\n}\n";
  // SVG bar chart: % of copy bandwidth per case and shape.
  const int bar = 16, left = 330, width = 500;
  std::ofstream svg(prefix + ".svg");
  svg << fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='monospace' font-size='11'>\n",
                     left + width + 80, 40 + bar * int(rows.size()));
  svg << fmt::format("<text x='10' y='18' font-size='13'>% of cuMemcpyDtoD bandwidth — {}</text>\n", gpu);
  for (size_t i = 0; i < rows.size(); ++i) {
    const int y = 30 + bar * int(i);
    const double w = std::min(1.2, rows[i].pct_copy / 100.0) * width;
    svg << fmt::format("<text x='{}' y='{}' text-anchor='end'>{} {}</text>\n", left - 6, y + 11, rows[i].name, rows[i].shape);
    svg << fmt::format("<rect x='{}' y='{}' width='{:.1f}' height='{}' fill='{}'/>\n", left, y + 2, w, bar - 4,
                       rows[i].pct_copy >= 90 ? "#3a7" : "#d84");
    svg << fmt::format("<text x='{:.1f}' y='{}'>{:.1f}%</text>\n", left + w + 4, y + 11, rows[i].pct_copy);
  }
  svg << fmt::format("<line x1='{0}' y1='26' x2='{0}' y2='{1}' stroke='#000' stroke-dasharray='3,3'/>\n", left + width,
                     30 + bar * int(rows.size()));
  svg << "</svg>\n";
}

}  // namespace

namespace {

// Input copies to rotate over: together more than 3x L2 (2 at least, 64 at most).
int rotations_for(const Case& c) {
  const double in_bytes = double(numel(c.shape)) * 2.0;
  return std::min(64, int(std::max(2.0, std::ceil(3.0 * double(gpu_info(0).l2_bytes) / in_bytes))));
}

// One launch of `k` on rotation i of `b`'s inputs.
void launch(const Kernel& k, const Bound& b, int i) { k(0, b.inputs[size_t(i) % b.inputs.size()], b.outputs); }

// One launch of `k` on rotation i of `b`'s inputs, timed by CUDA events on its own (ms): the
// stream is idle at the first event, so the time includes the host's launch latency.
double timed_launch(const Kernel& k, const Bound& b, int i) {
  EventTimer ev;
  ev.record_start();
  launch(k, b, i);
  ev.record_stop();
  return ev.elapsed_ms();
}

// GPU milliseconds of each of `n` calls of `call(i)`, all enqueued back to back behind a head
// start (a 256 MiB device copy the GPU runs while the host enqueues), CUDA events around each:
// the GPU's time per call, not the host's launch latency (as bench/python/benchutil.py times).
std::vector<double> queued_ms(int n, const std::function<void(int)>& call) {
  static DeviceBuffer src = DeviceBuffer::alloc(size_t(256) << 20), dst = DeviceBuffer::alloc(size_t(256) << 20);
  auto& drv = detail::Driver::get();
  drv.check(drv.cuMemcpyDtoDAsync_v2(CUdeviceptr(dst.ptr()), CUdeviceptr(src.ptr()), src.bytes(), nullptr),
            "cuMemcpyDtoDAsync");
  std::vector<EventTimer> ev(size_t(std::max(n, 0)));
  for (int i = 0; i < n; ++i) {
    ev[size_t(i)].record_start();
    call(i);
    ev[size_t(i)].record_stop();
  }
  std::vector<double> ms;
  for (const EventTimer& e : ev) ms.push_back(e.elapsed_ms());
  return ms;
}

// Checks `c`'s kernel on its small shape, then times it: rotating inputs over 3x L2, 3 warm-ups,
// CUDA events around each launch, the median of `repeats`. Launches are queued back to back
// (queued_ms) unless `synced` (each timed alone, the host's launch latency included).
Timing time_case(const Kernel& k, const Case& c, int repeats, bool synced) {
  Timing t;
  t.checked = check_small(k, c);
  Bound b = bind_case(k.pipeline(), c.shape, c, rotations_for(c));
  for (int i = 0; i < 3; ++i) timed_launch(k, b, i);
  std::vector<double> t_ms;
  if (synced)
    for (int i = 0; i < repeats; ++i) t_ms.push_back(timed_launch(k, b, i));
  else
    t_ms = queued_ms(repeats, [&](int i) { launch(k, b, i); });
  t.us = median(t_ms) * 1e3;
  t.bytes = b.bytes;
  return t;
}

// Two kernels' medians and the median over rounds of b's time / a's.
struct PairTiming {
  Timing a, b;
  double ratio = 1;
};

// A binding of pipeline p that reads `a`'s inputs and writes into `a`'s output buffers where the
// sizes agree (its own buffers elsewhere), so that only what differs between two kernels (e.g.
// the scales' layout) sits at different addresses.
Bound bind_sharing(const Pipeline& p, const std::vector<int64_t>& shape, const Bound& a) {
  Bound b;
  b.inputs = a.inputs;
  b.bytes = a.bytes;
  for (const DeviceBuffer& buf : a.out_bufs) b.bytes -= double(buf.bytes());
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const OutputGeometry g = output_geometry(p, int(o), shape, a.groups);
    void* ptr = nullptr;
    if (o < a.out_bufs.size() && int64_t(a.out_bufs[o].bytes()) == g.storage_bytes) {
      ptr = reinterpret_cast<void*>(a.out_bufs[o].ptr());
    } else {
      b.out_bufs.push_back(DeviceBuffer::alloc(size_t(g.storage_bytes)));
      ptr = reinterpret_cast<void*>(b.out_bufs.back().ptr());
    }
    b.outputs.push_back(TensorView::strided(ptr, p.outputs()[o].dtype, g.view_shape, g.view_strides, DeviceKind::cuda));
    b.bytes += double(g.storage_bytes);
  }
  return b;
}

// Checks both kernels, then launches them alternately (A B, B A, ...: neither always goes
// first), B on A's inputs and, where sizes agree, A's output buffers (bind_sharing), each launch
// timed by events: queued back to back (queued_ms) unless `synced`.
PairTiming time_pair(const Kernel& ka, const Kernel& kb, const Case& c, int rounds, bool synced) {
  PairTiming t;
  t.a.checked = check_small(ka, c);
  t.b.checked = check_small(kb, c);
  const Bound ba = bind_case(ka.pipeline(), c.shape, c, rotations_for(c));
  const Bound bb = bind_sharing(kb.pipeline(), c.shape, ba);
  for (int i = 0; i < 3; ++i) timed_launch(ka, ba, i), timed_launch(kb, bb, i);
  // Call j of the sequence: round j / 2, A first in even rounds.
  auto is_a = [](int j) { return (j / 2) % 2 == j % 2; };
  std::vector<double> ms;
  if (synced)
    for (int j = 0; j < 2 * rounds; ++j)
      ms.push_back(is_a(j) ? timed_launch(ka, ba, j / 2) : timed_launch(kb, bb, j / 2));
  else
    ms = queued_ms(2 * rounds, [&](int j) { is_a(j) ? launch(ka, ba, j / 2) : launch(kb, bb, j / 2); });
  std::vector<double> ta, tb, r;
  for (int i = 0; i < rounds; ++i) {
    const double x = is_a(2 * i) ? ms[size_t(2 * i)] : ms[size_t(2 * i + 1)];
    const double y = is_a(2 * i) ? ms[size_t(2 * i + 1)] : ms[size_t(2 * i)];
    ta.push_back(x);
    tb.push_back(y);
    r.push_back(y / x);
  }
  t.a.us = median(ta) * 1e3;
  t.b.us = median(tb) * 1e3;
  t.a.bytes = ba.bytes;
  t.b.bytes = bb.bytes;
  t.ratio = median(r);
  return t;
}

}  // namespace

Timing time_kernel(const Kernel& k, const std::vector<int64_t>& shape, int repeats, bool synced) {
  return time_case(k,
                   Case{"", nullptr, shape, Case::Input::row_major,
                        shape.size() == 3 ? std::vector<int64_t>{2, 96, 160} : std::vector<int64_t>{130, 224}},
                   repeats, synced);
}

namespace {

// A row's time, bytes, GB/s and percentage of the copy bandwidth from a timing.
void set_rates(BenchRow& r, const Timing& t, double copy) {
  r.us = t.us;
  r.bytes = t.bytes;
  r.gbps = r.bytes / (r.us * 1e-6) / 1e9;
  r.pct_copy = 100.0 * r.gbps / copy;
}

}  // namespace

std::vector<BenchRow> run_bench(const BenchOptions& o) {
  GpuInfo info = gpu_info(0);
  make_current(0);
  const double copy = copy_bandwidth();
  std::vector<BenchRow> rows;
  rows.push_back(BenchRow{"cuMemcpyDtoD (read+write)", "2 GiB", 0, copy, 100.0, double(size_t(4) << 30), true});
  fmt::print("{} ({}), copy bandwidth {:.0f} GB/s\n", info.name, nvrtc_arch(info.cc_major, info.cc_minor), copy);
  fmt::print("{:<32} {:>18} {:>10} {:>9} {:>8} {:>6}\n", "case", "shape", "us", "GB/s", "% copy", "check");
  const Target t = current_target();
  const Schedule schedule = o.schedule.empty() ? Schedule{} : Schedule::parse(o.schedule);
  if (!o.schedule.empty()) fmt::print("every case with the schedule {}\n", schedule.str());
  for (const Case& c : cases(o)) {
    Pipeline p = c.make();
    Kernel k = jit(p, t, schedule);
    BenchRow r;
    r.name = c.name;
    r.shape = fmt::format("{}", fmt::join(c.shape, "x"));
    Timing tm = time_case(k, c, o.repeats, o.synced || c.synced);
    r.checked = tm.checked;
    set_rates(r, tm, copy);
    fmt::print("{:<32} {:>18} {:>10.1f} {:>9.1f} {:>7.1f}% {:>6}\n", r.name, r.shape, r.us, r.gbps, r.pct_copy,
               r.checked ? "ok" : "FAIL");
    rows.push_back(r);
  }
  const std::vector<Pair> pv = pairs(o);
  if (!pv.empty())
    fmt::print("\ninterleaved pairs ({} rounds): case vs baseline, medians and the median per-round difference\n", std::max(o.repeats, 60));
  for (const Pair& pr : pv) {
    const Case c{pr.name, pr.make, pr.shape, Case::Input::row_major,
                 pr.shape.size() == 3 ? std::vector<int64_t>{2, 96, 160} : std::vector<int64_t>{130, 224}};
    const Kernel ka = jit(pr.base(), t, schedule), kb = jit(pr.make(), t, schedule);
    const PairTiming tm = time_pair(ka, kb, c, std::max(o.repeats, 60), o.synced);
    BenchRow r;
    r.name = pr.name;
    r.shape = fmt::format("{}", fmt::join(pr.shape, "x"));
    r.checked = tm.a.checked && tm.b.checked;
    set_rates(r, tm.b, copy);
    r.base_us = tm.a.us;
    r.vs_base_pct = 100.0 * (tm.ratio - 1.0);
    fmt::print("{:<36} {:>14} {:>9.1f} vs {:>9.1f} us {:>+7.2f}% {:>6}\n", r.name, r.shape, r.us, r.base_us, r.vs_base_pct,
               r.checked ? "ok" : "FAIL");
    rows.push_back(r);
  }
  if (!o.out_prefix.empty()) write_files(o.out_prefix, rows, info.name);
  return rows;
}

}  // namespace mxjit::bench
