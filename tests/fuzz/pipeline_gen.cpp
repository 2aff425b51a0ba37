#include "pipeline_gen.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/limits.hpp"
#include "dsl/peer_recipes.hpp"

namespace mxjit::fuzz {

uint32_t Choices::below(uint32_t n) {
  uint32_t v = 0;
  for (int k = 0; k < (n > 256 ? 2 : 1); ++k) v = v << 8 | (at_ < size_ ? data_[at_++] : 0u);
  return v % n;
}

namespace {

const std::vector<ElemFormat> kFormats = {e4m3, e5m2, e2m3, e3m2, e2m1, int8};
const std::vector<ScaleRule> kRules = {ScaleRule::floor, ScaleRule::rceil, ScaleRule::ceil, ScaleRule::even};
// Block sizes: mostly the useful ones, then tails of every kind: longer than most axes, past a
// GPU tile, past the CPU tile, at and past the 2^40 limit, not a power of two.
const std::vector<int64_t> kBlocks = {32, 32, 32, 16, 16, 8, 64, 128};
const std::vector<int64_t> kOddBlocks = {1, 2, 4, 256, 512, 4096, int64_t(1) << 20, int64_t(1) << 23, int64_t(1) << 31,
                                         int64_t(1) << 40, int64_t(1) << 41, 48};
const std::vector<int64_t> kExtents = {1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 32, 33, 63, 64, 65, 96, 100, 127, 128, 130, 200, 257};
constexpr int64_t kCap = int64_t(1) << 16;  // elements of a normal case's domain

/// Builds a pipeline from choices, writing down what it chose.
struct Builder {
  explicit Builder(Choices& choices) : c(choices) {}
  Choices& c;
  std::string recipe;
  int rank = 2;
  DType dtype = DType::bf16;
  Expr x{0.0};
  int groups_axis = -1;  // the axis of the offsets input "offs" once used
  int block_axis = 0;    // the (first) block axis of the last blocks

  int64_t block_size() { return c.one_in(5) ? c.pick(kOddBlocks) : c.pick(kBlocks); }

  void note(const std::string& s) { recipe += s + " "; }

  /// The value the casts quantize: x or a prologue over it (a second input, a vector, activations).
  Expr prologue(int depth) {
    if (depth > 2 || c.below(10) < 6) return x;
    const std::vector<double> consts = {0.5, 3.0, -2.0, 1e-30, 1e30, 448.0};
    switch (c.below(12)) {
      case 0: { const double k = c.pick(consts); note(fmt::format("*{}", k)); return prologue(depth + 1) * k; }
      case 1: { const int a = int(c.below(uint32_t(rank))); note(fmt::format("+vec{}", a)); return prologue(depth + 1) + vec("b", dtype, a, Rank{rank}); }
      case 2: note("relu"); return relu(prologue(depth + 1));
      case 3: note("silu"); return silu(prologue(depth + 1));
      case 4: note("gelu_tanh"); return gelu(prologue(depth + 1), Gelu::tanh);
      case 5: note("gelu_erf"); return gelu(prologue(depth + 1), Gelu::erf);
      case 6: note("swiglu(x,y)"); return swiglu(prologue(depth + 1), input("y", dtype, Rank{rank}));
      case 7: note("*y"); return prologue(depth + 1) * input("y", dtype, Rank{rank});
      case 8: { const double k = c.pick(consts); note(fmt::format("max{}", k)); return max(prologue(depth + 1), Expr(k)); }
      case 9: note("neg"); return -prologue(depth + 1);
      case 10: {
        const DType d = c.below(2) ? DType::bf16 : DType::f16;
        note(fmt::format("round_to({})", dtype_name(d)));
        return round_to(prologue(depth + 1), d);
      }
      default: note("abs"); return abs(prologue(depth + 1));
    }
  }

  Blocks blocks_of(const Expr& v) {
    const int a = int(c.below(uint32_t(rank)));
    if (c.one_in(8)) {  // jagged groups: one offsets input, one axis
      const int ga = groups_axis >= 0 ? groups_axis : a;
      groups_axis = ga;
      note(fmt::format("groups({})", ga));
      return groups(v, ga, offsets("offs"));
    }
    block_axis = a;
    if (rank >= 2 && c.one_in(6)) {
      const int b = c.one_in(16) ? a : (a + 1 + int(c.below(uint32_t(rank - 1)))) % rank;  // a == b: refused
      const int64_t s0 = block_size(), s1 = block_size();
      block_axis = std::min(a, b);
      note(fmt::format("blocks({},{},{}x{})", a, b, s0, s1));
      return blocks(v, {a, b}, {s0, s1});
    }
    const int64_t s = block_size();
    note(fmt::format("blocks({},{})", a, s));
    return blocks(v, a, s);
  }

  Scale scale_of(const Blocks& b, ElemFormat& elem) {
    switch (c.below(10)) {
      case 0:
        elem = e2m1;
        note("nvfp4");
        return nvfp4_scale(amax(b), c.one_in(2) ? Nvfp4Convention::te : Nvfp4Convention::torchao);
      case 1:
        elem = c.one_in(2) ? e4m3 : e5m2;
        if (c.one_in(3)) {
          note("f32_scale " + elem.str());
          return f32_scale(amax(b), elem);
        }
        return scale(amax(b), elem, generic_def(elem));
      case 2: {
        elem = c.one_in(3) ? fp_format(int(1 + c.below(5)), int(c.below(6))) : c.pick(kFormats);
        note("custom " + elem.str());
        const Expr e = c.one_in(2) ? ceil_log2(amax_var() * (1.0 / 448)) + 1.0 : floor_log2(max(amax_var(), Expr(1e-30))) - 2.0;
        return e8m0_scale(amax(b), elem, e, c.one_in(2) ? NanPolicy::nan_block : NanPolicy::satfinite);
      }
      default: {
        elem = c.one_in(8) ? fp_format(int(1 + c.below(5)), int(c.below(6))) : c.pick(kFormats);
        const ScaleRule r = c.pick(kRules);
        note(fmt::format("{} {}", elem.str(), rule_name(r)));
        return e8m0_scale(amax(b), elem, r, c.one_in(3) ? NanPolicy::satfinite : NanPolicy::nan_block);
      }
    }
  }

  /// A scale definition no library recipe names (ScaleRecipe::generic): a peer's, or one drawn
  /// from the expression language (divide or multiply, clamps, NaN-ignoring amax, conditions),
  /// stored as FP32, bf16, E4M3 or (powers of two) E8M0.
  ScaleDef generic_def(ElemFormat elem) {
    const bool p2 = c.one_in(2);
    ScaleDef d;
    bool pow2 = p2;
    switch (c.below(6)) {
      case 0: note(fmt::format("deepgemm{} {}", p2 ? " ue8m0" : "", elem.str())); d = recipes::deepgemm(elem, p2); break;
      case 1: note(fmt::format("vllm{} {}", p2 ? " ue8m0" : "", elem.str())); d = recipes::vllm_group(elem, p2); break;
      case 2: note(fmt::format("sglang{} {}", p2 ? " ue8m0" : "", elem.str())); d = recipes::sglang_group(elem, p2); break;
      case 3: note(fmt::format("te{} {}", p2 ? " pow2" : "", elem.str())); d = recipes::transformer_engine(elem, p2); break;
      case 4: note("torchao " + elem.str()); d = recipes::torchao_blockwise(elem); pow2 = false; break;
      default: {
        note("generic " + elem.str());
        const Expr a = c.one_in(2) ? amax_var() : fmax(amax_var(), Expr(1e-6));
        d.stored = c.one_in(2) ? a / double(float(elem.max_normal())) : pow2_ceil(a * (1.0 / 448));
        pow2 = false;
        d.factor = c.one_in(2) ? 1.0 / stored_var() : where(stored_var() == 0.0, 0.0, 1.0 / stored_var());
        if (c.one_in(2)) {
          d.apply = Apply::divide;
          d.factor = stored_var();
        }
        if (c.one_in(3)) d.zero_if = amax_var() == 0.0;
        if (c.one_in(3)) d.nan_if = isnan(stored_var()) || isinf(amax_var());
        d.amax_nan = c.one_in(2) ? AmaxNan::ignore : AmaxNan::propagate;
        if (c.one_in(2)) {
          d.clamp = c.one_in(2) ? Clamp::ignore_nan : Clamp::propagate_nan;
          d.clamp_lo = -double(float(elem.max_normal()));
          d.clamp_hi = double(float(elem.max_normal()));
        }
      }
    }
    if (pow2 && c.one_in(2)) {
      note("as e8m0");
      d.format = ScaleFormat::e8m0;
    } else if (c.one_in(5)) {
      note("as bf16");
      d.format = ScaleFormat::bf16;
    } else if (c.one_in(8)) {
      note("as e4m3");
      d.format = ScaleFormat::e4m3;
    }
    return d;
  }

  /// The codes' layout; for FP4 (packed along the innermost stored axis) mostly one whose
  /// innermost axis is the block axis.
  Layout elems_layout(bool packed = false) {
    if (packed && !c.one_in(6)) {
      std::vector<int> order;
      for (int i = 0; i < rank; ++i)
        if (i != block_axis) order.push_back(i);
      order.push_back(block_axis);
      return Layout::permuted(order);
    }
    switch (c.below(rank >= 2 ? 8 : 3)) {
      case 0: return Layout::col_major();
      case 1: return c.one_in(20) ? Layout::blocked_128x4() : Layout::row_major();  // a scale layout: refused
      case 3: return Layout::expert_col_major();
      case 4: {
        std::vector<int> order(static_cast<size_t>(rank));
        std::iota(order.begin(), order.end(), 0);
        for (int i = rank - 1; i > 0; --i) std::swap(order[size_t(i)], order[c.below(uint32_t(i + 1))]);
        return Layout::permuted(order);
      }
      default: return Layout::row_major();
    }
  }

  /// The scales' layout; FP32 scales take blocked layouts rarely (they are refused there).
  Layout scales_layout(bool f32) {
    if (f32 && !c.one_in(10)) return c.one_in(3) ? Layout::col_major() : Layout::linear();
    switch (c.below(10)) {
      case 0: case 1: return Layout::blocked_128x4();
      case 2: return Layout::blocked_8x4();
      case 3: return Layout::col_major();
      case 4: {
        const int ga = groups_axis >= 0 ? groups_axis : int(c.below(uint32_t(rank)));
        groups_axis = ga;
        return Layout::grouped_blocked_128x4("offs", ga);
      }
      default: return Layout::linear();
    }
  }

  std::vector<Output> outputs;  ///< the last pipeline's outputs (generate_case may add a mask)

  Pipeline build() {
    rank = int(1 + c.below(4));
    dtype = c.pick(std::vector<DType>{DType::bf16, DType::bf16, DType::f32, DType::f16});
    note(fmt::format("{}[{}] ->", dtype_name(dtype), rank));
    if (c.one_in(12)) return dequant();
    x = input("x", dtype, Rank{rank});
    const Expr v = prologue(0);
    std::vector<Output> outs;
    const int casts = c.one_in(40) ? 9 : int(1 + (c.below(8) < 5 ? 0 : c.below(3)));  // 9: past the limit
    for (int k = 0; k < casts; ++k) {
      const Blocks b = blocks_of(c.one_in(6) ? prologue(1) : v);
      ElemFormat elem;
      const Scale s = scale_of(b, elem);
      CastOptions o;
      Round round = Round::nearest_even;
      if (c.one_in(8)) {
        round = Round::stochastic;
        o.seed = c.below(1000);
        o.offset = c.below(7);
        note("sr");
      }
      o.flush_subnormals = c.one_in(8);
      if (o.flush_subnormals) note("flush");
      // torch's non-saturating cast (DeepGEMM), for the formats with NaN.
      Saturate sat = Saturate::finite;
      if (round == Round::nearest_even && elem.has_nan() && c.one_in(4)) {
        sat = Saturate::none;
        note("nosat");
      }
      const int what = int(c.below(10));  // 0: scales only, 1: codes only, else both
      if (what != 0)
        outs.push_back(output(fmt::format("q{}", k), cast(elem, b.value() / s, round, sat, o), elems_layout(elem.packed())));
      const ScaleFormat sf = s.node()->scale_format;
      if (what != 1) outs.push_back(output(fmt::format("s{}", k), s, scales_layout(sf == ScaleFormat::f32 || sf == ScaleFormat::bf16)));
      note(";");
    }
    if (c.one_in(6)) { note("amax"); outs.push_back(output("a", amax(x))); }
    if (c.one_in(6)) {
      const DType vt = c.pick(std::vector<DType>{DType::bf16, DType::f16, DType::f32});
      note(fmt::format("values {}", dtype_name(vt)));
      outs.push_back(output("v", v, vt, elems_layout()));
    }
    outputs = outs;
    return pipeline(std::move(outs));
  }

  Pipeline dequant() {
    const ElemFormat elem = c.pick(kFormats);
    const ScaleFormat sf = c.pick(std::vector<ScaleFormat>{ScaleFormat::e8m0, ScaleFormat::e8m0, ScaleFormat::e4m3, ScaleFormat::f32});
    const int axis = int(c.below(uint32_t(rank)));
    const int64_t block = block_size();
    note(fmt::format("dequantize {} {} blocks({},{})", elem.str(), scale_format_name(sf), axis, block));
    Expr d = dequantize("codes", "scales", elem, sf, Rank{rank}, axis, block);
    if (c.one_in(3)) d = d * 2.0;
    const DType vt = c.pick(std::vector<DType>{DType::bf16, DType::f16, DType::f32});
    std::vector<Output> outs = {output("y", d, vt, elems_layout())};
    if (c.one_in(3)) outs.push_back(output("a", amax(d)));
    outputs = outs;
    return pipeline(std::move(outs));
  }
};

/// Domain extents: mostly small and odd (at most kCap elements); some empty with huge other
/// extents; a few past the element limit.
std::vector<int64_t> domain_of(Choices& c, int rank, std::string& recipe) {
  std::vector<int64_t> d(static_cast<size_t>(rank));
  const uint32_t mode = c.below(40);
  if (mode < 3) {  // empty: one extent 0, the others anything up to INT64_MAX
    const std::vector<int64_t> huge = {1, 7, 64, int64_t(1) << 40, int64_t(1) << 62, std::numeric_limits<int64_t>::max()};
    for (int64_t& e : d) e = c.pick(huge);
    d[c.below(uint32_t(rank))] = 0;
  } else if (mode < 4) {  // past 2^40 elements
    for (int64_t& e : d) e = int64_t(1) << (rank == 1 ? 41 : 21);
  } else {
    int64_t n = 1;
    for (int64_t& e : d) {
      e = std::max<int64_t>(1, std::min(c.pick(kExtents), kCap / n));
      n *= e;
    }
    if (rank == 1 && c.one_in(4)) d[0] = 4096 + c.below(60000);  // a long row (direct kernel slots)
  }
  recipe += fmt::format("shape [{}]", fmt::join(d, ","));
  return d;
}

/// Strides of a view of `shape` in a random order, sometimes padded.
std::vector<int64_t> strides_of(Choices& c, const std::vector<int64_t>& shape, std::string& recipe) {
  const int rank = int(shape.size());
  std::vector<int> order(static_cast<size_t>(rank));  // outermost first
  std::iota(order.begin(), order.end(), 0);
  const uint32_t kind = c.below(10);
  if (kind == 6) std::reverse(order.begin(), order.end());  // Fortran
  if (kind == 7)
    for (int i = rank - 1; i > 0; --i) std::swap(order[size_t(i)], order[c.below(uint32_t(i + 1))]);
  const int64_t pad = kind >= 8 ? int64_t(1 + c.below(9)) : 0;  // rows padded (a sliced view)
  std::vector<int64_t> st(size_t(rank), 1);
  std::optional<int64_t> acc = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int a = order[size_t(i)];
    st[size_t(a)] = acc.value_or(0);
    const std::optional<int64_t> row = checked_add(std::max<int64_t>(shape[size_t(a)], 1), i == rank - 1 ? pad : 0);
    if (acc) acc = row ? checked_mul(*acc, *row) : std::nullopt;
  }
  if (kind >= 6) recipe += fmt::format(" strides [{}]", fmt::join(st, ","));
  return st;
}

}  // namespace

Case generate_case(Choices& c) {
  Case k;
  Builder b(c);
  try {
    k.pipeline = b.build();
  } catch (const UsageError& e) {
    k.refused = e.what();
  }
  k.recipe = b.recipe;
  k.domain = domain_of(c, b.rank, k.recipe);
  k.seed = c.below(1 << 16);
  // Masked rows, chosen from the seed (no draw of their own: older corpus bytes keep their cases).
  if (k.pipeline && b.rank >= 2 && k.seed % 5 == 2) {
    const int axis = int(k.seed / 5 % uint64_t(b.rank)), by = int(k.seed / 25 % uint64_t(b.rank));  // equal: refused
    k.recipe += fmt::format(" mask({},{},cnt)", axis, by);
    try {
      k.pipeline = pipeline(b.outputs, mask(axis, by, "cnt"));
    } catch (const UsageError& e) {
      k.pipeline.reset();
      k.refused = e.what();
      return k;
    }
  }
  if (!k.pipeline) return k;
  const Pipeline& p = *k.pipeline;
  for (const InputDecl& d : p.inputs()) {
    InputData in;
    in.dtype = d.dtype;
    switch (d.kind) {
      case InputDecl::Kind::tensor:
        in.shape = k.domain;
        break;
      case InputDecl::Kind::vector:
        in.shape = {k.domain[size_t(d.axis)]};
        break;
      case InputDecl::Kind::codes:
        in.shape = k.domain;
        for (const Output& o : p.outputs())  // FP4 codes: two per byte along the block axis
          if (o.node->op == Op::dequant && o.node->elem.packed()) in.shape[size_t(d.axis)] /= 2;
        break;
      case InputDecl::Kind::scales:
        for (const Output& o : p.outputs())
          if (o.node->op == Op::dequant) in.shape = scale_shape(o.node->block, k.domain);
        if (in.shape.empty()) in.shape = k.domain;  // under an expression: its dequantize node
        for (const Output& o : p.outputs())
          for (const NodePtr& a : o.node->args)
            if (a->op == Op::dequant) in.shape = scale_shape(a->block, k.domain);
        break;
      case InputDecl::Kind::offsets: {
        const int64_t extent = k.domain[size_t(d.axis)];
        const int n = int(c.below(6));
        int64_t prev = 0;
        for (int g = 0; g < n; ++g) {
          const int64_t room = std::min<int64_t>(extent, std::numeric_limits<int32_t>::max()) - prev;
          prev += room > 0 ? int64_t(c.below(uint32_t(std::min<int64_t>(room, 1 << 15) + 1))) : 0;
          in.ends.push_back(int32_t(prev));
        }
        if (n > 0 && c.one_in(3)) in.ends.back() = int32_t(std::min<int64_t>(extent, std::numeric_limits<int32_t>::max()));
        if (n > 1 && c.one_in(12)) std::swap(in.ends[0], in.ends[size_t(n) - 1]);  // out of order: refused
        if (n > 0 && c.one_in(16)) in.ends.back() = int32_t(std::min<int64_t>(extent + 1, std::numeric_limits<int32_t>::max()));
        in.shape = {int64_t(in.ends.size())};
        k.groups = int64_t(in.ends.size());
        k.recipe += fmt::format(" ends [{}]", fmt::join(in.ends, ","));
        break;
      }
      case InputDecl::Kind::counts: {  // each in [0, extent]; one in 16 cases a count past it (refused)
        const int64_t extent = std::min<int64_t>(k.domain[size_t(p.mask().axis)], std::numeric_limits<int32_t>::max() - 1);
        in.shape = {k.domain[size_t(d.axis)]};
        for (int64_t i = 0; i < std::min<int64_t>(in.shape[0], 1 << 16); ++i)
          in.ends.push_back(c.one_in(4) ? int32_t(extent) : int32_t(c.below(uint32_t(std::min<int64_t>(extent, 1 << 20) + 1))));
        if (!in.ends.empty() && c.one_in(16)) in.ends[c.below(uint32_t(in.ends.size()))] = c.one_in(2) ? -1 : int32_t(extent + 1);
        k.recipe += fmt::format(" counts [{}]", fmt::join(in.ends.begin(), in.ends.begin() + std::min<ptrdiff_t>(8, ptrdiff_t(in.ends.size())), ","));
        break;
      }
    }
    in.strides = d.one_dim() && d.kind != InputDecl::Kind::vector ? std::vector<int64_t>{1} : strides_of(c, in.shape, k.recipe);
    const std::optional<int64_t> n = element_count(in.shape);
    in.unaddressable = !n || *n > kCap * 64;  // never read: the launch must refuse it, or it is empty
    const uint32_t f = c.below(10);
    in.fill = f < 4 ? Fill::random : f < 8 ? Fill::adversarial : Fill::edge;
    in.edge = float(c.below(14));  // an index into the edge list of the input's type
    k.inputs.push_back(std::move(in));
  }
  return k;
}

}  // namespace mxjit::fuzz
