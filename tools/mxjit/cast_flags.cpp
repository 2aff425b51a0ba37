#include "tools/mxjit/cast_flags.hpp"

#include <charconv>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/text.hpp"

namespace mxjit::tool {
namespace {

/// A positive decimal integer, or nullopt.
std::optional<int64_t> parse_positive(std::string_view s) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

/// "32" -> {32}; "32x32" -> {32, 32}; nullopt when malformed.
std::optional<std::vector<int64_t>> parse_block(std::string_view s) {
  const size_t x = s.find('x');
  if (x == std::string_view::npos) {
    if (auto v = parse_positive(s)) return std::vector<int64_t>{*v};
    return std::nullopt;
  }
  auto a = parse_positive(s.substr(0, x));
  auto b = parse_positive(s.substr(x + 1));
  if (!a || !b) return std::nullopt;
  return std::vector<int64_t>{*a, *b};
}

const CLI::Validator kBlockSize(
    [](std::string& s) -> std::string {
      return parse_block(s) ? std::string() : fmt::format("block size '{}' must be N or NxM with positive N, M", s);
    },
    "N|NxM");

ElemFormat elem_named(const std::string& n) { return elem_format_named(n); }

ScaleRule rule_named(const std::string& n) {
  if (n == "rceil") return ScaleRule::rceil;
  if (n == "ceil") return ScaleRule::ceil;
  if (n == "even") return ScaleRule::even;
  return ScaleRule::floor;
}

/// Resolves a possibly negative axis against `rank` (-1 = last); out-of-range values are left
/// for the DSL to report with its own message.
int resolve_axis(int axis, int rank) { return axis < 0 && axis >= -rank ? axis + rank : axis; }

}  // namespace

void add_cast_flags(CLI::App& app, CastFlags& f, const std::string& groups_help) {
  CLI::Option* spec = f.opt_spec = app.add_option("--spec", f.spec,
                                     "the cast in the short text form, e.g. "
                                     "\"bf16[2] -> mxfp8.e4m3 rceil blocks(0,32) q:col_major s:blocked128x4\"");
  CLI::Option* preset = app.add_option("--preset", f.preset, "a named recipe: nvfp4 (E2M1, 16-blocks, E4M3 scales)")
                            ->check(CLI::IsMember({"nvfp4"}));
  f.opt_convention = app.add_option("--convention", f.convention, "NVFP4 convention")
                         ->check(CLI::IsMember({"te", "torchao"}))
                         ->capture_default_str();
  CLI::Option* elem = app.add_option("--elem", f.elem, "element format")
                          ->check(CLI::IsMember({"e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "int8"}))
                          ->capture_default_str();
  f.opt_scale = app.add_option("--scale", f.scale, "scale format (e4m3: NVFP4 two-level; fp32: FP8 recipes)")
                    ->check(CLI::IsMember({"e8m0", "e4m3", "fp32"}))
                    ->capture_default_str();
  f.opt_rule = app.add_option("--rule", f.rule, "E8M0 scale rule")
                   ->check(CLI::IsMember({"floor", "rceil", "ceil", "even"}))
                   ->capture_default_str();
  f.opt_nan_policy = app.add_option("--nan-policy", f.nan_policy, "what a block holding NaN/Inf gets (E8M0)")
                         ->check(CLI::IsMember({"nan_block", "satfinite"}))
                         ->capture_default_str();
  CLI::Option* block = app.add_option("--block", f.block,
                                      "block size: N along --block-axis, or NxM over the last two axes "
                                      "(default 32; 16 for E4M3 scales)")
                           ->check(kBlockSize);
  f.opt_block_axis = app.add_option("--block-axis", f.block_axis,
                                    "axis along which consecutive elements share a scale (negative: from the "
                                    "end; default: the last)");
  CLI::Option* elayout = app.add_option("--elems-layout", f.elems_layout, "layout the kernel writes the codes in")
                             ->check(CLI::IsMember({"row_major", "col_major", "expert_col_major"}))
                             ->capture_default_str();
  CLI::Option* slayout =
      app.add_option("--scales-layout", f.scales_layout,
                     "layout of the scales: linear, blocked128x4, blocked8x4, mn_major_tma, mn_major_tma_packed, "
                     "gemm_ready_2d, ... or modes(...) (dsl/layout.hpp)")
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                try {
                  Layout::parse(text);
                  return {};
                } catch (const UsageError& e) {
                  return e.what();
                }
              },
              "LAYOUT"))
          ->capture_default_str();
  CLI::Option* groups = app.add_option("--groups", f.groups, groups_help);
  CLI::Option* group_axis = app.add_option("--group-axis", f.group_axis, "axis the groups run along")
                                ->capture_default_str()
                                ->needs(groups);
  CLI::Option* flush = app.add_flag("--flush", f.flush, "FP32 subnormal inputs become +-0 before the cast");
  CLI::Option* amax = app.add_flag("--amax", f.amax, "also output the tensor amax");
  for (CLI::Option* o : {preset, f.opt_convention, elem, f.opt_scale, f.opt_rule, f.opt_nan_policy, block,
                         f.opt_block_axis, elayout, slayout, group_axis, flush, amax})
    spec->excludes(o);
  for (CLI::Option* o : {elem, f.opt_scale, f.opt_rule, f.opt_nan_policy}) preset->excludes(o);
  for (CLI::Option* o : {block, f.opt_block_axis}) groups->excludes(o);
}

Pipeline build_pipeline(const CastFlags& f, DType dtype, int r) {
  if (f.opt_spec && f.opt_spec->count() > 0) return parse_pipeline(f.spec);  // --spec "" is an empty spec, an error
  const bool nvfp4 = f.preset == "nvfp4" || f.scale == "e4m3";
  const ElemFormat elem = f.preset == "nvfp4" ? e2m1 : elem_named(f.elem);
  if (f.scale == "e4m3" && !(elem == e2m1))
    throw UsageError(fmt::format("--scale e4m3 is the NVFP4 recipe and needs --elem e2m1, not --elem {}", f.elem));
  if (f.scale == "fp32" && !(elem == e4m3) && !(elem == e5m2))
    throw UsageError(fmt::format("--scale fp32 (the FP8 per-block recipe) needs --elem e4m3 or e5m2, not --elem {}",
                                 f.elem));
  const bool e8m0 = !nvfp4 && f.scale == "e8m0";
  if (!e8m0 && f.opt_rule->count() > 0)
    throw UsageError(fmt::format("--rule {} applies to E8M0 scales only; these scales are {}", f.rule,
                                 nvfp4 ? "E4M3 (NVFP4)" : "FP32"));
  if (!e8m0 && f.opt_nan_policy->count() > 0)
    throw UsageError(fmt::format("--nan-policy {} applies to E8M0 scales only; these scales are {}", f.nan_policy,
                                 nvfp4 ? "E4M3 (NVFP4)" : "FP32"));
  if (!nvfp4 && f.opt_convention->count() > 0)
    throw UsageError(fmt::format("--convention {} applies to NVFP4 only (--preset nvfp4 or --scale e4m3)",
                                 f.convention));

  const Expr x = input("x", dtype, rank(r));
  const auto blocks_of = [&]() -> Blocks {
    if (!f.groups.empty()) return groups(x, resolve_axis(f.group_axis, r), offsets(kOffsetsName));
    std::vector<int64_t> size = f.block.empty() ? std::vector<int64_t>{nvfp4 ? 16 : 32} : *parse_block(f.block);
    if (size.size() == 2) {
      if (f.opt_block_axis->count() > 0)
        throw UsageError(fmt::format("--block {} is a 2-D block over the last two axes; drop --block-axis", f.block));
      if (r < 2) throw UsageError(fmt::format("--block {} needs an input of rank >= 2, got rank {}", f.block, r));
      return blocks(x, {r - 2, r - 1}, {size[0], size[1]});
    }
    return blocks(x, resolve_axis(f.block_axis, r), size[0]);
  };
  const Blocks b = blocks_of();
  Scale s = nvfp4 ? nvfp4_scale(amax(b), f.convention == "torchao" ? Nvfp4Convention::torchao : Nvfp4Convention::te)
          : f.scale == "fp32"
              ? f32_scale(amax(b), elem)
              : e8m0_scale(amax(b), elem, rule_named(f.rule),
                           f.nan_policy == "satfinite" ? NanPolicy::satfinite : NanPolicy::nan_block);
  CastOptions options;
  options.flush_subnormals = f.flush;
  const Quantized q = cast(elem, x / s, Round::nearest_even, Saturate::finite, options);
  std::vector<Output> outs = {output("q", q, Layout::parse(f.elems_layout)),
                              output("s", s, Layout::parse(f.scales_layout))};
  if (f.amax) outs.push_back(output("amax", amax(x)));
  return pipeline(std::move(outs));
}

}  // namespace mxjit::tool
