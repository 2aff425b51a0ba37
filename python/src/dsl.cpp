// The DSL in Python, name for name (dsl/dsl.hpp, dsl/pipeline.hpp, dsl/layout.hpp, dsl/text.hpp):
//
//     x = mx.input("x", mx.bf16, 2)                           # or mx.rank(2)
//     s = mx.e8m0_scale(mx.amax(mx.blocks(x, 0, 32)), mx.e4m3, mx.ScaleRule.rceil)
//     p = mx.pipeline([mx.output("q", mx.cast(mx.e4m3, x / s), mx.layout.col_major()),
//                      mx.output("s", s, mx.layout.blocked_128x4())])
//
// builds the same IR as the C++ spelling, so the two hash the same. Misuse raises UsageError.
#include <nanobind/operators.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <set>

#include "bindings.hpp"
#include "dsl/dsl.hpp"
#include "dsl/errors.hpp"
#include "dsl/geometry.hpp"
#include "dsl/pipeline.hpp"
#include "dsl/text.hpp"

namespace mxjit::python {

namespace {

const char* input_kind_name(InputDecl::Kind k) {
  switch (k) {
    case InputDecl::Kind::tensor: return "tensor";
    case InputDecl::Kind::vector: return "vector";
    case InputDecl::Kind::offsets: return "offsets";
    case InputDecl::Kind::codes: return "codes";
    case InputDecl::Kind::scales: return "scales";
    case InputDecl::Kind::counts: return "counts";
  }
  return "?";
}

// What Python needs to compute an output's geometry itself (for symbolic shapes under
// torch.compile): the fields output_geometry() reads, resolved for the pipeline's rank.
nb::dict output_info(const Pipeline& p, size_t i) {
  const Output& o = p.outputs().at(i);
  nb::dict d;
  d["name"] = o.name;
  d["kind"] = kind_name(o.kind);
  d["dtype"] = o.dtype;
  d["layout"] = o.layout.str();
  // The bound layout (dsl/layout_bound.hpp): modes (axis, div, ext) outermost first, per-axis
  // alignment, values per word; strided layouts view the padded tensor of words.
  nb::list modes;
  for (const BoundLayout::Mode& m : o.bound.modes) modes.append(nb::make_tuple(m.axis, m.div, m.ext));
  d["modes"] = modes;
  d["align"] = o.bound.align;
  d["pack"] = o.bound.pack;
  d["strided"] = o.bound.strided();
  d["order"] = o.bound.strided() ? o.bound.order() : std::vector<int>{};
  d["group_axis"] = o.layout.group_axis();
  d["packed"] = o.kind == OutputKind::elems && o.node->elem.packed();
  std::vector<int> axes;
  std::vector<int64_t> sizes;
  bool jagged = false;
  int row = -1, col = -1;
  if (o.kind == OutputKind::scales || o.kind == OutputKind::elems) {
    const BlockSpec& b = block_of(o.node);
    axes = b.axes;
    sizes = b.sizes;
    jagged = b.jagged();
    if (o.layout.uses_roles()) std::tie(row, col) = layout_roles(o, p.rank());
  }
  d["block_axes"] = axes;
  d["block_sizes"] = sizes;
  d["jagged"] = jagged;
  d["row_axis"] = row;
  d["col_axis"] = col;
  if (o.kind == OutputKind::elems || o.kind == OutputKind::scales) {
    const NodePtr& sn = o.kind == OutputKind::scales ? o.node : o.node->args[1];
    d["elem"] = std::string(sn->elem.str());
    d["scale_format"] = std::string(scale_format_name(sn->scale_format));
  }
  return d;
}

// Codes inputs whose dequantize node decodes FP4 (two codes per byte along the block axis).
void packed_codes(const NodePtr& n, std::set<std::string>& out) {
  if (n->op == Op::dequant && n->elem.packed()) out.insert(n->args[0]->name);
  for (const NodePtr& a : n->args) packed_codes(a, out);
}

}  // namespace

void bind_dsl(nb::module_& m) {
  nb::enum_<DType>(m, "DType", "How one element of a tensor is stored (MX codes and E8M0/E4M3 scales are u8).")
      .value("bf16", DType::bf16).value("f16", DType::f16).value("f32", DType::f32)
      .value("u8", DType::u8).value("i32", DType::i32).value("i64", DType::i64);
  nb::enum_<ScaleRule>(m, "ScaleRule", "How a block's E8M0 exponent is chosen from its amax (docs/numerics.md).")
      .value("floor", ScaleRule::floor).value("rceil", ScaleRule::rceil).value("ceil", ScaleRule::ceil)
      .value("even", ScaleRule::even).value("custom", ScaleRule::custom);
  nb::enum_<NanPolicy>(m, "NanPolicy", "What a block holding NaN or Inf gets: nan_block (OCP) or satfinite (TE).")
      .value("nan_block", NanPolicy::nan_block).value("satfinite", NanPolicy::satfinite);
  nb::enum_<Round>(m, "Round", "Rounding onto the element grid.")
      .value("nearest_even", Round::nearest_even).value("stochastic", Round::stochastic);
  nb::enum_<Saturate>(m, "Saturate", "Beyond the format's range: finite clamps to +-max normal; none gives NaN / "
                                       "+-Inf (torch's .to(), E4M3 / E5M2 only).")
      .value("finite", Saturate::finite).value("none", Saturate::none);
  nb::enum_<Nvfp4Convention>(m, "Nvfp4Convention", "The two bit-exact NVFP4 conventions.")
      .value("te", Nvfp4Convention::te).value("torchao", Nvfp4Convention::torchao);
  nb::enum_<ScaleFormat>(m, "ScaleFormat", "How block scales are stored.")
      .value("e8m0", ScaleFormat::e8m0).value("e4m3", ScaleFormat::e4m3).value("f32", ScaleFormat::f32)
      .value("bf16", ScaleFormat::bf16);
  nb::enum_<Gelu>(m, "Gelu", "GELU: tanh approximation or exact erf.").value("tanh", Gelu::tanh).value("erf", Gelu::erf);

  nb::class_<ElemFormat>(m, "ElemFormat", "An element format (ebits, mbits, specials): e4m3, e2m1, fp_format(3, 3)...")
      .def_prop_ro("name", [](const ElemFormat& f) { return f.str(); })
      .def_ro("ebits", &ElemFormat::ebits)
      .def_ro("mbits", &ElemFormat::mbits)
      .def_prop_ro("bits", &ElemFormat::bits)
      .def_prop_ro("max_normal", &ElemFormat::max_normal)
      .def_prop_ro("packed", &ElemFormat::packed)
      .def("__eq__", [](const ElemFormat& a, const ElemFormat& b) { return a == b; })
      .def("__hash__", [](const ElemFormat& f) { return nb::hash(nb::str(f.str().c_str())); })
      .def("__repr__", [](const ElemFormat& f) { return "mxjit." + f.str(); });
  m.attr("e4m3") = e4m3;
  m.attr("e5m2") = e5m2;
  m.attr("e2m3") = e2m3;
  m.attr("e3m2") = e3m2;
  m.attr("e2m1") = e2m1;
  m.attr("int8") = int8;
  m.def("fp_format", &fp_format, nb::arg("ebits"), nb::arg("mbits"),
        "A user floating-point element format with all codes finite.");
  m.def("elem_format_named", &elem_format_named, nb::arg("name"), "A standard element format by name ('e4m3', ...).");

  nb::class_<Rank>(m, "Rank", "Rank of an input: rank(2).").def_ro("value", &Rank::value);
  m.def("rank", &rank, nb::arg("r"));
  nb::class_<Offsets>(m, "Offsets", "Group ends (int32 device tensor, torch's offs): offsets('offs').")
      .def_ro("name", &Offsets::name);
  m.def("offsets", &offsets, nb::arg("name"));

  nb::class_<Expr>(m, "Expr", "An element-wise FP32 value over the pipeline's domain.")
      .def(nb::init_implicit<double>())
      .def_prop_ro("rank", &Expr::rank)
      .def("__add__", [](const Expr& a, const Expr& b) { return a + b; })
      .def("__radd__", [](const Expr& a, const Expr& b) { return b + a; })
      .def("__sub__", [](const Expr& a, const Expr& b) { return a - b; })
      .def("__rsub__", [](const Expr& a, const Expr& b) { return b - a; })
      .def("__mul__", [](const Expr& a, const Expr& b) { return a * b; })
      .def("__rmul__", [](const Expr& a, const Expr& b) { return b * a; })
      .def("__truediv__", [](const Expr& a, const Scale& s) { return a / s; })
      .def("__truediv__", [](const Expr& a, const Expr& b) { return a / b; })
      .def("__rtruediv__", [](const Expr& a, const Expr& b) { return b / a; })
      .def("__neg__", [](const Expr& a) { return -a; })
      // Comparisons of scale expressions give conditions (IEEE: false with a NaN operand).
      .def("__eq__", [](const Expr& a, const Expr& b) { return a == b; }, nb::is_operator())
      .def("__lt__", [](const Expr& a, const Expr& b) { return a < b; }, nb::is_operator())
      .def("__le__", [](const Expr& a, const Expr& b) { return a <= b; }, nb::is_operator())
      .def("__gt__", [](const Expr& a, const Expr& b) { return a > b; }, nb::is_operator())
      .def("__ge__", [](const Expr& a, const Expr& b) { return a >= b; }, nb::is_operator())
      .def("__repr__", [](const Expr& e) { return "mxjit.Expr(" + canonical(e.node()) + ")"; });
  nb::class_<Blocks>(m, "Blocks", "A value cut into blocks that each share one scale.")
      .def_prop_ro("value", &Blocks::value);
  nb::class_<Amax>(m, "Amax", "max |x| per block, or over the whole tensor.");
  nb::class_<Scale>(m, "Scale", "One scale per block.")
      .def_prop_ro("definition", [](const Scale& s) { return scale_definition(*s.node()); },
                   "The canonical text of the scale's definition (its expressions and attributes).");
  nb::class_<Scaled>(m, "Scaled", "A value divided by its scale, ready for cast().");
  nb::class_<Quantized>(m, "Quantized", "Quantized elements.").def_prop_ro("scale", &Quantized::scale);

  m.def("input", [](std::string name, DType dtype, int r) { return input(std::move(name), dtype, rank(r)); },
        nb::arg("name"), nb::arg("dtype"), nb::arg("rank"), "A full-rank input tensor (bf16, f16 or f32).");
  m.def("input", [](std::string name, DType dtype, Rank r) { return input(std::move(name), dtype, r); },
        nb::arg("name"), nb::arg("dtype"), nb::arg("rank"));
  m.def("vec", [](std::string name, DType dtype, int axis, int r) { return vec(std::move(name), dtype, axis, rank(r)); },
        nb::arg("name"), nb::arg("dtype"), nb::arg("axis"), nb::arg("rank"),
        "A 1-D input broadcast along domain axis `axis` of a rank-`rank` domain.");
  m.def("vec", [](std::string name, DType dtype, int axis, Rank r) { return vec(std::move(name), dtype, axis, r); },
        nb::arg("name"), nb::arg("dtype"), nb::arg("axis"), nb::arg("rank"));
  m.def("max", [](const Expr& a, const Expr& b) { return max(a, b); }, nb::arg("a"), nb::arg("b"));
  m.def("min", [](const Expr& a, const Expr& b) { return min(a, b); }, nb::arg("a"), nb::arg("b"));
  m.def("abs", [](const Expr& a) { return abs(a); }, nb::arg("a"));
  m.def("relu", [](const Expr& a) { return relu(a); }, nb::arg("a"));
  m.def("silu", [](const Expr& a) { return silu(a); }, nb::arg("a"));
  m.def("sigmoid", [](const Expr& a) { return sigmoid(a); }, nb::arg("a"));
  m.def("round_to", [](const Expr& a, DType d) { return round_to(a, d); }, nb::arg("a"), nb::arg("dtype"),
        "a rounded to bf16 or f16 (nearest even) and read back as FP32, e.g. SGLang's T(silu(gate)) * up.");
  m.def("exp", [](const Expr& a) { return exp(a); }, nb::arg("a"));
  m.def("gelu", [](const Expr& a, Gelu k) { return gelu(a, k); }, nb::arg("a"), nb::arg("kind") = Gelu::tanh);
  m.def("swiglu", [](const Expr& g, const Expr& u) { return swiglu(g, u); }, nb::arg("gate"), nb::arg("up"));
  m.def("amax_var", &amax_var, "The block's amax inside a custom scale expression.");
  m.def("floor_log2", [](const Expr& a) { return floor_log2(a); }, nb::arg("a"));
  m.def("ceil_log2", [](const Expr& a) { return ceil_log2(a); }, nb::arg("a"));

  m.def("blocks", [](const Expr& x, int axis, int64_t size) { return blocks(x, axis, size); }, nb::arg("x"),
        nb::arg("axis"), nb::arg("size"), "1-D blocks of `size` consecutive elements along `axis`.");
  m.def("blocks", [](const Expr& x, std::array<int, 2> axes, std::array<int64_t, 2> sizes) { return blocks(x, axes, sizes); },
        nb::arg("x"), nb::arg("axes"), nb::arg("sizes"), "2-D blocks, e.g. blocks(x, (0, 1), (32, 32)).");
  m.def("groups", [](const Expr& x, int axis, const Offsets& ends) { return groups(x, axis, ends); }, nb::arg("x"),
        nb::arg("axis"), nb::arg("ends"), "Jagged groups along `axis`, ends from an int32 offsets input.");
  m.def("amax", [](const Blocks& b) { return amax(b); }, nb::arg("blocks"));
  m.def("amax", [](const Expr& x) { return amax(x); }, nb::arg("x"));
  m.def("e8m0_scale", [](const Amax& a, ElemFormat e, ScaleRule r, NanPolicy p) { return e8m0_scale(a, e, r, p); },
        nb::arg("block_amax"), nb::arg("elem"), nb::arg("rule"), nb::arg("policy") = NanPolicy::nan_block,
        "An E8M0 scale for elements of `elem` under `rule` (or a custom exponent expression).");
  m.def("e8m0_scale", [](const Amax& a, ElemFormat e, const Expr& x, NanPolicy p) { return e8m0_scale(a, e, x, p); },
        nb::arg("block_amax"), nb::arg("elem"), nb::arg("exponent"), nb::arg("policy") = NanPolicy::nan_block);
  m.def("f32_scale",
        [](const Amax& a, ElemFormat e, bool store_multiplier, bool pow2) {
          return f32_scale(a, e, F32ScaleOptions{store_multiplier, pow2});
        },
        nb::arg("block_amax"), nb::arg("elem"), nb::kw_only(), nb::arg("store_multiplier") = false,
        nb::arg("pow2") = false,
        "An FP32 scale: r = max_normal / max(amax, 1e-12) (FP8 rowwise recipes); stores 1 / r, or r with "
        "store_multiplier (torchao's form); pow2 rounds r down to a power of two first.");
  m.def("nvfp4_scale", [](const Amax& a, Nvfp4Convention c) { return nvfp4_scale(a, c); }, nb::arg("block_amax"),
        nb::arg("convention"), "NVFP4: E4M3 block scale under an FP32 per-tensor scale.");
  m.def("cast",
        [](ElemFormat e, const Scaled& s, Round round, Saturate sat, uint64_t seed, uint64_t offset, bool flush) {
          return cast(e, s, round, sat, CastOptions{seed, offset, flush});
        },
        nb::arg("elem"), nb::arg("scaled"), nb::arg("round") = Round::nearest_even, nb::arg("sat") = Saturate::finite,
        nb::kw_only(), nb::arg("seed") = 0, nb::arg("offset") = 0, nb::arg("flush_subnormals") = false,
        "Casts `x / scale` to `elem`.");
  m.def("dequantize",
        [](std::string codes, std::string scales, ElemFormat e, ScaleFormat f, int r, int axis, int64_t block) {
          return dequantize(std::move(codes), std::move(scales), e, f, rank(r), axis, block);
        },
        nb::arg("codes"), nb::arg("scales"), nb::arg("elem"), nb::arg("scale_format"), nb::arg("rank"), nb::arg("axis"),
        nb::arg("block"), "Decodes MX codes (u8 input) with their scales (linear layout) to FP32 values.");

  nb::class_<Axis>(m, "Axis", "An axis a layout names: layout.axis(0), layout.rows, layout.cols, layout.rest.")
      .def("__truediv__", [](const Axis& a, int64_t d) { return Mode(a) / d; }, nb::arg("div"))
      .def("__mod__", [](const Axis& a, int64_t e) { return Mode(a) % e; }, nb::arg("ext"))
      .def("__invert__", [](const Axis& a) { return ~a; })
      .def("__eq__", [](const Axis& a, const Axis& b) { return a == b; })
      .def("__str__", &Axis::str)
      .def("__repr__", [](const Axis& a) { return "mxjit.Axis(" + a.str() + ")"; });
  nb::class_<Mode>(m, "Mode", "A sub-axis i / div % ext of a layout: layout.rows / 32 % 4.")
      .def(nb::init_implicit<Axis>())
      .def_ro("axis", &Mode::axis)
      .def_ro("div", &Mode::div)
      .def_ro("ext", &Mode::ext)
      .def("__truediv__", [](const Mode& a, int64_t d) { return a / d; }, nb::arg("div"))
      .def("__mod__", [](const Mode& a, int64_t e) { return a % e; }, nb::arg("ext"))
      .def("__eq__", [](const Mode& a, const Mode& b) { return a == b; })
      .def("__str__", &Mode::str)
      .def("__repr__", [](const Mode& a) { return "mxjit.Mode(" + a.str() + ")"; });
  nb::class_<Layout>(m, "Layout", "A memory layout: named (row_major, blocked_128x4, mn_major_tma, ...) or "
                                  "layout.modes([...]).align(axis, m).pack(p) (dsl/layout.hpp)")
      .def_static("parse", &Layout::parse, nb::arg("text"))
      .def("align", [](const Layout& l, const Mode& a, int64_t m) {
             if (a.div != 1 || a.ext != 0) throw UsageError(fmt::format("Layout.align({}): align a whole axis", a.str()));
             return l.align(a.axis, m);
           }, nb::arg("axis"), nb::arg("m"), "This layout with `axis` padded to a multiple of `m`.")
      .def("pack", &Layout::pack, nb::arg("p"), "The innermost mode (extent p) packs p values into one word.")
      .def("groups", [](const Layout& l, const Offsets& o, int axis) { return l.groups(o.name, axis); },
           nb::arg("ends"), nb::arg("group_axis"), "Jagged groups along `group_axis`, ends from an offsets input.")
      .def_prop_ro("modes", [](const Layout& l) { return l.modes(); })
      .def_prop_ro("packing", &Layout::packing)
      .def_prop_ro("grouped", &Layout::grouped)
      .def_prop_ro("uses_roles", &Layout::uses_roles)
      .def_prop_ro("definition", &Layout::definition, "The general form, names spelled out.")
      .def("order", &Layout::order, nb::arg("rank"))
      .def("__str__", &Layout::str)
      .def("__repr__", [](const Layout& l) { return "mxjit.Layout(" + l.str() + ")"; })
      .def("__eq__", [](const Layout& a, const Layout& b) { return a == b; })
      .def("__hash__", [](const Layout& l) { return nb::hash(nb::str(l.str().c_str())); });
  nb::module_ lm = m.def_submodule("layout", "Layouts: layout.col_major(), layout.blocked_128x4(), "
                                             "layout.modes([layout.rest, layout.cols, layout.rows]).align(layout.rows, 4)");
  lm.attr("rows") = Axis::rows();
  lm.attr("cols") = Axis::cols();
  lm.attr("rest") = Axis::rest();
  lm.def("axis", &Axis::at, nb::arg("a"), "Axis `a` from the front (a >= 0) or the back (-1: the last).");
  lm.def("modes", &layout::modes, nb::arg("modes"), "A layout from its modes, outermost first.");
  lm.def("mn_major_tma", &layout::mn_major_tma);
  lm.def("mn_major_tma_packed", &layout::mn_major_tma_packed);
  lm.def("gemm_ready_2d", &layout::gemm_ready_2d);
  lm.def("gemm_ready_2d_t", &layout::gemm_ready_2d_t);
  lm.def("row_major", &layout::row_major);
  lm.def("col_major", &layout::col_major);
  lm.def("expert_col_major", &layout::expert_col_major);
  lm.def("permuted", &layout::permuted, nb::arg("order"));
  lm.def("linear", &layout::linear);
  lm.def("blocked_128x4", &layout::blocked_128x4);
  lm.def("blocked_8x4", &layout::blocked_8x4);
  lm.def("grouped_blocked_128x4", [](const Offsets& o, int axis) { return layout::grouped_blocked_128x4(o, axis); },
         nb::arg("ends"), nb::arg("group_axis"));

  nb::class_<Output>(m, "Output", "One named output of a pipeline with its layout.")
      .def_ro("name", &Output::name)
      .def_ro("dtype", &Output::dtype)
      .def_ro("layout", &Output::layout)
      .def_prop_ro("kind", [](const Output& o) { return kind_name(o.kind); });
  m.def("output", [](std::string n, const Quantized& q, const Layout& l) { return output(std::move(n), q, l); },
        nb::arg("name"), nb::arg("value"), nb::arg("layout") = Layout::row_major());
  m.def("output", [](std::string n, const Scale& s, const Layout& l) { return output(std::move(n), s, l); },
        nb::arg("name"), nb::arg("value"), nb::arg("layout") = Layout::linear());
  m.def("output", [](std::string n, const Amax& a) { return output(std::move(n), a); }, nb::arg("name"), nb::arg("value"));
  m.def("output", [](std::string n, const Expr& v, DType d, const Layout& l) { return output(std::move(n), v, d, l); },
        nb::arg("name"), nb::arg("value"), nb::arg("dtype"), nb::arg("layout") = Layout::row_major());

  nb::class_<InputDecl>(m, "InputDecl", "A declared input, in the order kernels take them.")
      .def_ro("name", &InputDecl::name)
      .def_ro("dtype", &InputDecl::dtype)
      .def_ro("rank", &InputDecl::rank)
      .def_ro("axis", &InputDecl::axis)
      .def_prop_ro("kind", [](const InputDecl& d) { return input_kind_name(d.kind); })
      .def("__repr__", [](const InputDecl& d) {
        return "InputDecl(" + d.name + ", " + std::string(dtype_name(d.dtype)) + ", " + input_kind_name(d.kind) + ")";
      });
  nb::class_<OutputGeometry>(m, "OutputGeometry", "Where one output's bytes go for a given domain shape.")
      .def_ro("logical_shape", &OutputGeometry::logical_shape)
      .def_ro("view_shape", &OutputGeometry::view_shape)
      .def_ro("view_strides", &OutputGeometry::view_strides)
      .def_ro("storage_bytes", &OutputGeometry::storage_bytes)
      .def_ro("packed_axis", &OutputGeometry::packed_axis)
      .def_ro("row_axis", &OutputGeometry::row_axis)
      .def_ro("col_axis", &OutputGeometry::col_axis);
  nb::class_<Pipeline>(m, "Pipeline", "An immutable, validated pipeline: outputs over one domain.")
      .def_prop_ro("outputs", &Pipeline::outputs)
      .def_prop_ro("inputs", &Pipeline::inputs)
      .def_prop_ro("rank", &Pipeline::rank)
      .def_prop_ro("ir", &Pipeline::str, "Canonical multi-line IR text.")
      .def_prop_ro("hash", [](const Pipeline& p) { return p.hash().hex(); }, "128-bit stable hash, 32 hex digits.")
      .def("input_index", &Pipeline::input_index, nb::arg("name"))
      .def_prop_ro("mask", [](const Pipeline& p) -> std::optional<Mask> {
        if (!p.mask().active()) return std::nullopt;
        return p.mask();
      }, "The masked rows (mxjit.Mask), or None.")
      .def("output_geometry",
           [](const Pipeline& p, int index, std::vector<int64_t> shape, int64_t groups) {
             return output_geometry(p, index, shape, groups);
           },
           nb::arg("index"), nb::arg("shape"), nb::arg("groups") = 0)
      .def("output_info", [](const Pipeline& p) {
        nb::list l;
        for (size_t i = 0; i < p.outputs().size(); ++i) l.append(output_info(p, i));
        return l;
      }, "Per output: the fields its geometry follows from (kind, dtype, layout order, blocks, ...).")
      .def("input_info", [](const Pipeline& p) {
        std::set<std::string> packed;
        for (const Output& o : p.outputs()) packed_codes(o.node, packed);
        nb::list l;
        for (const InputDecl& d : p.inputs()) {
          nb::dict e;
          e["name"] = d.name;
          e["kind"] = input_kind_name(d.kind);
          e["dtype"] = d.dtype;
          e["rank"] = d.rank;
          e["axis"] = d.axis;
          e["packed"] = packed.count(d.name) > 0;
          l.append(e);
        }
        return l;
      }, "Per input: name, kind, dtype, rank, axis (vectors: the domain axis; codes: the block axis) and packed "
         "(FP4 codes, two per byte along that axis).")
      .def("to_text", [](const Pipeline& p) { return to_text(p); })
      .def("__eq__", [](const Pipeline& a, const Pipeline& b) { return a.hash() == b.hash(); })
      .def("__hash__", [](const Pipeline& p) { return nb::hash(nb::str(p.hash().hex().c_str())); })
      .def("__repr__", [](const Pipeline& p) { return "mxjit.Pipeline(" + p.hash().hex() + ")"; });
  nb::class_<Mask>(m, "Mask", "Masked rows (SGLang's masked_m): along `axis`, the first counts[i] positions of index i of "
                              "`by` are real; the others are neither read nor written. mask(1, 0, 'masked_m').")
      .def_ro("axis", &Mask::axis)
      .def_ro("by", &Mask::by)
      .def_ro("counts", &Mask::counts)
      .def("__repr__", [](const Mask& k) {
        return "mxjit.mask(" + std::to_string(k.axis) + ", " + std::to_string(k.by) + ", '" + k.counts + "')";
      });
  m.def("mask", &mask, nb::arg("axis"), nb::arg("by"), nb::arg("counts"),
        "Masked rows along `axis`, one int32 count per index of axis `by` (input `counts`).");
  m.def("pipeline",
        [](std::vector<Output> outputs, std::optional<Mask> k) {
          return k ? pipeline(std::move(outputs), std::move(*k)) : pipeline(std::move(outputs));
        },
        nb::arg("outputs"), nb::arg("mask") = nb::none(),
        "Validates and freezes a pipeline; `mask` (mxjit.mask(axis, by, counts)) masks rows (its counts input comes last).");
  m.def("parse_pipeline", &parse_pipeline, nb::arg("text"), "Parses the short text form (dsl/text.hpp).");
  m.def("to_text", &to_text, nb::arg("pipeline"), "The canonical short text form of a pipeline.");
  m.def("dtype_size", [](DType t) { return dtype_size(t); }, nb::arg("dtype"));
  bind_scale_defs(m);
}

}  // namespace mxjit::python
