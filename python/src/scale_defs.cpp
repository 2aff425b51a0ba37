// Scale definitions in Python, name for name (dsl/dsl.hpp ScaleDef and its expression language,
// dsl/recipes.hpp, dsl/peer_recipes.hpp):
//
//     d = mx.ScaleDef(stored=mx.fmax(mx.amax_var(), 1e-10) / 448.0, factor=mx.stored_var(),
//                     apply=mx.Apply.divide, clamp=mx.Clamp.ignore_nan, clamp_lo=-448, clamp_hi=448,
//                     amax_nan=mx.AmaxNan.ignore)              # == mx.recipes.vllm_group(mx.e4m3, False)
//     s = mx.scale(mx.amax(mx.blocks(x, 1, mx.whole)), mx.e4m3, d)
//
// Conditions combine with |, & and ~ (C++ ||, &&, !); comparisons of expressions give conditions.
#include <nanobind/operators.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "dsl/dsl.hpp"
#include "dsl/peer_recipes.hpp"
#include "dsl/recipes.hpp"

namespace mxjit::python {

void bind_scale_defs(nb::module_& m) {
  m.attr("whole") = kWholeAxis;
  m.attr("kWholeAxis") = kWholeAxis;
  nb::enum_<Apply>(m, "Apply", "What elements do with their block's factor: multiply or divide (IEEE).")
      .value("multiply", Apply::multiply).value("divide", Apply::divide);
  nb::enum_<Clamp>(m, "Clamp", "A clamp of the scaled elements: none, propagate_nan (torch.clamp), ignore_nan "
                               "(fminf(fmaxf(...)): NaN becomes lo) or ignore_nan_hi (fmaxf(fminf(...)): NaN becomes hi).")
      .value("none", Clamp::none)
      .value("propagate_nan", Clamp::propagate_nan)
      .value("ignore_nan", Clamp::ignore_nan)
      .value("ignore_nan_hi", Clamp::ignore_nan_hi);
  nb::enum_<AmaxNan>(m, "AmaxNan", "Whether a block's amax sees NaN: propagate (torch.amax) or ignore (CUDA fmaxf).")
      .value("propagate", AmaxNan::propagate).value("ignore", AmaxNan::ignore);

  nb::class_<Cond>(m, "Cond", "A condition inside a scale expression (per block, never NaN): a | b, a & b, ~a.")
      .def("__or__", [](const Cond& a, const Cond& b) { return a || b; })
      .def("__and__", [](const Cond& a, const Cond& b) { return a && b; })
      .def("__invert__", [](const Cond& a) { return !a; })
      .def("__repr__", [](const Cond& c) { return "mxjit.Cond(" + canonical(c.node()) + ")"; });
  m.def("tamax_var", &tamax_var, "The tensor amax inside a two-level scale expression.");
  m.def("stored_var", &stored_var, "The stored scale as read back from its format, inside a factor or condition.");
  m.def("floor_log2", [](const Expr& a, int mbits) { return floor_log2(a, mbits); }, nb::arg("a"), nb::arg("mbits"),
        "floor(log2(x)) once x's significand is rounded to `mbits` bits, ties to even (the EVEN rule).");
  m.def("fmax", [](const Expr& a, const Expr& b) { return fmax(a, b); }, nb::arg("a"), nb::arg("b"),
        "Maximum ignoring NaN, as CUDA's fmaxf.");
  m.def("fmin", [](const Expr& a, const Expr& b) { return fmin(a, b); }, nb::arg("a"), nb::arg("b"),
        "Minimum ignoring NaN, as CUDA's fminf.");
  m.def("exp2", [](const Expr& e) { return exp2(e); }, nb::arg("e"), "2^floor(e), exactly.");
  m.def("pow2_floor", [](const Expr& a) { return pow2_floor(a); }, nb::arg("a"),
        "The largest power of two <= |x| with x's sign.");
  m.def("pow2_ceil", [](const Expr& a) { return pow2_ceil(a); }, nb::arg("a"),
        "The smallest power of two >= |x| with x's sign.");
  m.def("clamp", [](const Expr& x, const Expr& lo, const Expr& hi) { return clamp(x, lo, hi); }, nb::arg("x"),
        nb::arg("lo"), nb::arg("hi"), "min(max(x, lo), hi), NaN propagating.");
  m.def("isnan", [](const Expr& x) { return isnan(x); }, nb::arg("x"));
  m.def("isinf", [](const Expr& x) { return isinf(x); }, nb::arg("x"));
  m.def("never", &never, "The condition that never holds.");
  m.def("where", [](const Cond& c, const Expr& a, const Expr& b) { return where(c, a, b); }, nb::arg("cond"),
        nb::arg("a"), nb::arg("b"), "`a` where `cond` holds, else `b` (per block).");

  nb::class_<ScaleDef>(m, "ScaleDef", "A scale written as the FP32 operations a recipe runs (dsl/dsl.hpp).")
      .def(
          "__init__",
          [](ScaleDef* d, std::optional<Expr> stored, std::optional<Expr> factor, ScaleFormat format, Apply apply,
             std::optional<Cond> zero_if, std::optional<Cond> nan_if, Clamp clamp, double clamp_lo, double clamp_hi,
             AmaxNan amax_nan) {
            new (d) ScaleDef{format, std::move(stored), std::move(factor), apply, std::move(zero_if),
                             std::move(nan_if), clamp, clamp_lo, clamp_hi, amax_nan};
          },
          nb::kw_only(), nb::arg("stored") = nb::none(), nb::arg("factor") = nb::none(),
          nb::arg("format") = ScaleFormat::f32, nb::arg("apply") = Apply::multiply, nb::arg("zero_if") = nb::none(),
          nb::arg("nan_if") = nb::none(), nb::arg("clamp") = Clamp::none, nb::arg("clamp_lo") = 0.0,
          nb::arg("clamp_hi") = 0.0, nb::arg("amax_nan") = AmaxNan::propagate)
      .def_rw("format", &ScaleDef::format)
      .def_rw("stored", &ScaleDef::stored)
      .def_rw("factor", &ScaleDef::factor)
      .def_rw("apply", &ScaleDef::apply)
      .def_rw("zero_if", &ScaleDef::zero_if)
      .def_rw("nan_if", &ScaleDef::nan_if)
      .def_rw("clamp", &ScaleDef::clamp)
      .def_rw("clamp_lo", &ScaleDef::clamp_lo)
      .def_rw("clamp_hi", &ScaleDef::clamp_hi)
      .def_rw("amax_nan", &ScaleDef::amax_nan);
  m.def("scale", [](const Amax& a, ElemFormat e, const ScaleDef& d) { return scale(a, e, d); }, nb::arg("block_amax"),
        nb::arg("elem"), nb::arg("definition"),
        "The scale `definition` for elements of `elem`; UsageError names the part that is not a valid scale.");
  nb::module_ r = m.def_submodule("recipes", "Scale definitions: the library's rules and the peers' recipes "
                                             "(dsl/recipes.hpp, dsl/peer_recipes.hpp)");
  r.def("rule_exponent", &recipes::rule_exponent, nb::arg("elem"), nb::arg("rule"));
  r.def("e8m0_exponent", &recipes::e8m0_exponent, nb::arg("exponent"), nb::arg("policy"));
  r.def("e8m0", &recipes::e8m0, nb::arg("elem"), nb::arg("rule"), nb::arg("policy") = NanPolicy::nan_block);
  r.def("f32_multiplier",
        [](ElemFormat e, bool store_multiplier, bool pow2) {
          return recipes::f32_multiplier(e, F32ScaleOptions{store_multiplier, pow2});
        },
        nb::arg("elem"), nb::kw_only(), nb::arg("store_multiplier") = false, nb::arg("pow2") = false,
        "The FP8 rowwise FP32 recipe (torchao's Float8 rowwise / tensorwise).");
  r.def("nvfp4", &recipes::nvfp4, nb::arg("convention"));
  r.def("deepgemm", &recipes::deepgemm, nb::arg("elem"), nb::arg("ue8m0"),
        "DeepGEMM's per_token_cast_to_fp8 / per_block_cast_to_fp8 (cast with Saturate.none).");
  r.def("vllm_group", &recipes::vllm_group, nb::arg("elem"), nb::arg("ue8m0"), nb::arg("eps") = 1e-10,
        "vLLM's per_token_group_quant_fp8 CUDA kernel.");
  r.def("sglang_group", &recipes::sglang_group, nb::arg("elem"), nb::arg("ue8m0"),
        "SGLang's per_token_group_quant_8bit v1 CUDA kernel (precise division).");
  r.def("transformer_engine", &recipes::transformer_engine, nb::arg("elem"), nb::arg("pow2"), nb::arg("eps") = 0.0,
        nb::arg("input_max") = 0x1.fep127, "Transformer Engine's Float8BlockScaling quantizer.");
  r.def("torchao_blockwise", &recipes::torchao_blockwise, nb::arg("elem"),
        "torchao's blockwise FP8 training kernels.");
}

}  // namespace mxjit::python
