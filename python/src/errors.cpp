// C++ exceptions -> Python exceptions. The classes live in mxjit._mxjit and are re-exported by mxjit:
//
//     Error(Exception)                     any mxjit error
//     ├── UsageError(Error, ValueError)    the caller's mistake, named argument and rule
//     ├── CompileError(Error, RuntimeError)  .log, .options, .numbered_source (NVRTC)
//     └── CudaError(Error, RuntimeError)   .call, .code (a Driver API call, or no GPU)
#include <Python.h>

#include "bindings.hpp"
#include "dsl/errors.hpp"

namespace mxjit::python {

namespace {

PyObject* g_error = nullptr;
PyObject* g_usage = nullptr;
PyObject* g_compile = nullptr;
PyObject* g_cuda = nullptr;

PyObject* new_class(nb::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qual = std::string("mxjit._mxjit.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(qual.c_str(), doc, bases, nullptr);
  if (!t) throw nb::python_error();
  m.attr(name) = nb::handle(t);
  return t;
}

// Raises `type(message)` with extra attributes set on the instance.
void raise_with(PyObject* type, const char* message,
                std::initializer_list<std::pair<const char*, nb::object>> attrs) {
  nb::object inst = nb::steal(PyObject_CallFunction(type, "s", message));
  if (!inst.is_valid()) return;  // the call set its own error
  for (const auto& [k, v] : attrs) nb::setattr(inst, k, v);
  PyErr_SetObject(type, inst.ptr());
}

}  // namespace

void bind_errors(nb::module_& m) {
  g_error = new_class(m, "Error", PyExc_Exception, "Base of every error mxjit raises on purpose.");
  nb::object usage_bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_ValueError));
  g_usage = new_class(m, "UsageError", usage_bases.ptr(),
                      "The caller's mistake, in words: which argument, which rule (a ValueError).");
  nb::object runtime_bases = nb::make_tuple(nb::handle(g_error), nb::handle(PyExc_RuntimeError));
  g_compile = new_class(m, "CompileError", runtime_bases.ptr(),
                        "NVRTC rejected generated source; .log, .options and .numbered_source reproduce it.");
  g_cuda = new_class(m, "CudaError", runtime_bases.ptr(),
                     "A CUDA Driver API call failed or no GPU is present; .call names it, .code is its result.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UsageError& e) {
      PyErr_SetString(g_usage, e.what());
    } catch (const CompileError& e) {
      raise_with(g_compile, e.what(),
                 {{"log", nb::str(e.log().data(), e.log().size())}, {"options", nb::str(e.options().data(), e.options().size())},
                  {"numbered_source", nb::str(e.numbered_source().data(), e.numbered_source().size())}});
    } catch (const CudaError& e) {
      raise_with(g_cuda, e.what(), {{"call", nb::str(e.call().data(), e.call().size())}, {"code", nb::int_(e.code())}});
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace mxjit::python
