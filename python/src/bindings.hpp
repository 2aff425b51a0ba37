#pragma once
/// \file The Python extension mxjit._mxjit (nanobind): one function per part registers its names
/// on the module. Python sees only ints for pointers and streams; torch is not needed to build it.
#include <nanobind/nanobind.h>

namespace mxjit::python {

namespace nb = nanobind;

/// mxjit.Error and its subclasses UsageError (a ValueError), CompileError and CudaError (RuntimeErrors),
/// and the translator from the C++ exceptions (errors.cpp).
void bind_errors(nb::module_& m);
/// The DSL: formats, enums, expressions, blocks, scales, casts, outputs, layouts, pipelines, the
/// text form and output geometry (dsl.cpp).
void bind_dsl(nb::module_& m);
/// Scale definitions: ScaleDef, its expression language (conditions, fmax, pow2_ceil, ...), mx.whole,
/// and the recipes submodule (scale_defs.cpp; called by bind_dsl).
void bind_scale_defs(nb::module_& m);
/// Kernels: jit, launch from ints on a GPU stream, run on host pointers, warm-up, devices, cache
/// statistics (kernels.cpp).
void bind_kernels(nb::module_& m);
/// Measurement helpers for bench/python (underscore names; bench.cpp).
void bind_bench(nb::module_& m);

}  // namespace mxjit::python
