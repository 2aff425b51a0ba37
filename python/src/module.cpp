// mxjit._mxjit: the compiled half of the mxjit Python package (the pure-Python half re-exports it).
#include "bindings.hpp"

NB_MODULE(_mxjit, m) {
  // Python-level caches (mxjit.torch keeps pipelines, kernels and formats in module dicts) are still
  // alive when nanobind checks for leaks at shutdown: not leaks, so no warning.
  nanobind::set_leak_warnings(false);
  m.doc() = "mxjit: MX / FP8 casts declared as pipelines, JIT-compiled for the GPU with NVRTC, run on the CPU too";
  mxjit::python::bind_errors(m);
  mxjit::python::bind_dsl(m);
  mxjit::python::bind_kernels(m);
  mxjit::python::bind_bench(m);
}
