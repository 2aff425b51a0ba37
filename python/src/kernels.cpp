// Kernels from Python: mxjit.jit(pipeline) -> Kernel, launched from plain ints.
//
//   k.launch(stream, device, ptrs, shapes, strides, workspace=0)     GPU: inputs then outputs
//   k.run_host(ptrs, shapes, strides)                                 CPU: LLVM backend, else reference
//
// The launch path takes no DLPack and no tensor object: pointers, extents and strides (in elements)
// as ints, one tuple each, in p.inputs() then p.outputs() order. Per call it
//   1. makes `device`'s primary context current for the call when another (or none) is, and the
//      caller's current again afterwards: torch's autograd backward thread and fresh Python threads
//      start with no current context, and torch reads its current device from the current context;
//   2. when `stream` is capturing a CUDA graph, switches this thread to the relaxed capture mode
//      for the call, so a JIT miss (cuLibraryLoadData, cuKernelGetFunction) inside a capture works;
//   3. compiles on a miss for the device's architecture with the GIL released, then launches.
// Nothing here ever unloads a module (kernels live as long as the process), so no capture that may
// be running is invalidated by an unload.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "bindings.hpp"
#include "dsl/errors.hpp"
#include "runtime/bindings.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel.hpp"
#include "backends/reference/executor.hpp"
#include "runtime/swizzle.hpp"
#if MXJIT_HAVE_LLVM
#include "backends/llvm/cpu_backend.hpp"
#endif

namespace mxjit::python {

namespace {

using detail::Driver;
constexpr int kMaxDevices = 64;

// ---- devices: primary contexts and architectures, looked up once per ordinal ----

struct DeviceSlot {
  std::atomic<CUcontext> primary{nullptr};
  std::string arch;  // set once under g_devices_mutex, before `primary`
};
std::array<DeviceSlot, kMaxDevices> g_devices;
std::mutex g_devices_mutex;

void check_ordinal(int device) {
  if (device < 0 || device >= kMaxDevices)
    throw UsageError("device " + std::to_string(device) + ": not a CUDA device ordinal (0.." +
                     std::to_string(kMaxDevices - 1) + ")");
}

DeviceSlot& device_slot(int device) {
  check_ordinal(device);
  DeviceSlot& s = g_devices[size_t(device)];
  if (s.primary.load(std::memory_order_acquire)) return s;
  std::lock_guard lock(g_devices_mutex);
  if (!s.primary.load(std::memory_order_relaxed)) {
    Driver& d = Driver::get();
    GpuInfo info = gpu_info(device);  // UsageError for an ordinal that does not exist
    CUdevice dev = 0;
    d.check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    CUcontext ctx = nullptr;
    d.check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");  // kept for the process
    s.arch = nvrtc_arch(info.cc_major, info.cc_minor);
    s.primary.store(ctx, std::memory_order_release);
  }
  return s;
}

// The device's primary context current on this thread (what torch uses), for good.
void make_primary_current(Driver& d, const DeviceSlot& s) {
  CUcontext cur = nullptr;
  CUcontext want = s.primary.load(std::memory_order_relaxed);
  if (d.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != want) d.check(d.cuCtxSetCurrent(want), "cuCtxSetCurrent");
}

// Step 1: the device's primary context current for one call; the caller's context (none, or another
// device's: torch reads its current device from it) is current again afterwards.
class ContextGuard {
 public:
  ContextGuard(Driver& d, const DeviceSlot& s) : d_(d) {
    CUcontext want = s.primary.load(std::memory_order_relaxed);
    if (d.cuCtxGetCurrent(&prev_) != CUDA_SUCCESS) prev_ = nullptr;
    if (prev_ != want) {
      d.check(d.cuCtxSetCurrent(want), "cuCtxSetCurrent");
      switched_ = true;
    }
  }
  ~ContextGuard() {
    if (switched_) d_.cuCtxSetCurrent(prev_);
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  Driver& d_;
  CUcontext prev_ = nullptr;
  bool switched_ = false;
};

// Step 2: relaxed capture mode on this thread while `stream` is capturing; restored on exit.
class CaptureRelax {
 public:
  CaptureRelax(Driver& d, uint64_t stream) : d_(d) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d.cuStreamIsCapturing(reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream)), &st) == CUDA_SUCCESS &&
        st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
      active_ = d.cuThreadExchangeStreamCaptureMode(&mode_) == CUDA_SUCCESS;
    }
  }
  ~CaptureRelax() {
    if (active_) d_.cuThreadExchangeStreamCaptureMode(&mode_);
  }
  CaptureRelax(const CaptureRelax&) = delete;
  CaptureRelax& operator=(const CaptureRelax&) = delete;

 private:
  Driver& d_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_GLOBAL;
  bool active_ = false;
};

// ---- reading ints from Python without conversions to Python-level lists ----

int64_t as_i64(PyObject* o, const char* what) {
  const long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw UsageError(std::string(what) + ": expected an int");
  }
  return int64_t(v);
}

// A tuple or list of ints (torch.Size is a tuple).
void read_ints(PyObject* seq, std::vector<int64_t>& out, const char* what) {
  out.clear();
  if (PyTuple_Check(seq)) {
    const Py_ssize_t n = PyTuple_GET_SIZE(seq);
    out.reserve(size_t(n));
    for (Py_ssize_t i = 0; i < n; ++i) out.push_back(as_i64(PyTuple_GET_ITEM(seq, i), what));
  } else if (PyList_Check(seq)) {
    const Py_ssize_t n = PyList_GET_SIZE(seq);
    out.reserve(size_t(n));
    for (Py_ssize_t i = 0; i < n; ++i) out.push_back(as_i64(PyList_GET_ITEM(seq, i), what));
  } else {
    throw UsageError(std::string(what) + ": expected a tuple or list of ints");
  }
}

PyObject* item(PyObject* seq, Py_ssize_t i) { return PyTuple_Check(seq) ? PyTuple_GET_ITEM(seq, i) : PyList_GET_ITEM(seq, i); }

Py_ssize_t seq_size(PyObject* seq, const char* what) {
  if (PyTuple_Check(seq)) return PyTuple_GET_SIZE(seq);
  if (PyList_Check(seq)) return PyList_GET_SIZE(seq);
  throw UsageError(std::string(what) + ": expected a tuple or list");
}

// Views of every tensor of one call: p.inputs() then p.outputs(), dtypes as declared unless given.
struct Views {
  std::vector<TensorView> in, out;
};

Views make_views(const Pipeline& p, nb::handle ptrs, nb::handle shapes, nb::handle strides, nb::handle dtypes,
                 DeviceKind device, int ordinal) {
  const size_t ni = p.inputs().size(), no = p.outputs().size();
  const Py_ssize_t n = seq_size(ptrs.ptr(), "ptrs");
  if (size_t(n) != ni + no || seq_size(shapes.ptr(), "shapes") != n || seq_size(strides.ptr(), "strides") != n)
    throw UsageError("launch: ptrs, shapes and strides need one entry per input and output (" + std::to_string(ni) +
                     " + " + std::to_string(no) + "), got " + std::to_string(n) + ", " +
                     std::to_string(seq_size(shapes.ptr(), "shapes")) + ", " +
                     std::to_string(seq_size(strides.ptr(), "strides")));
  const bool have_dtypes = !dtypes.is_none();
  if (have_dtypes && seq_size(dtypes.ptr(), "dtypes") != n)
    throw UsageError("launch: dtypes needs one entry per input and output");
  Views v;
  v.in.resize(ni);
  v.out.resize(no);
  for (Py_ssize_t i = 0; i < n; ++i) {
    TensorView& t = size_t(i) < ni ? v.in[size_t(i)] : v.out[size_t(i) - ni];
    t.data = reinterpret_cast<void*>(static_cast<uintptr_t>(as_i64(item(ptrs.ptr(), i), "ptrs")));
    t.dtype = size_t(i) < ni ? p.inputs()[size_t(i)].dtype : p.outputs()[size_t(i) - ni].dtype;
    if (have_dtypes) t.dtype = nb::cast<DType>(nb::handle(item(dtypes.ptr(), i)));
    read_ints(item(shapes.ptr(), i), t.shape, "shapes");
    read_ints(item(strides.ptr(), i), t.strides, "strides");
    if (t.strides.size() != t.shape.size())
      throw UsageError("launch: tensor " + std::to_string(i) + " has " + std::to_string(t.shape.size()) +
                       " extents but " + std::to_string(t.strides.size()) + " strides");
    t.device = device;
    t.device_ordinal = ordinal;
  }
  return v;
}

// The tensor-amax scratch `p` needs (as Kernel::workspace_bytes decides it from the plan's
// pre-pass): NVFP4's tensor amax, or a tensorwise scale's (BlockSpec::whole_tensor, the planner's
// rule) one block amax.
size_t pipeline_workspace_bytes(const Pipeline& p) {
  for (const Output& o : p.outputs()) {
    if (o.kind != OutputKind::scales && o.kind != OutputKind::elems) continue;
    const NodePtr& sn = o.kind == OutputKind::scales ? o.node : o.node->args[1];
    if (tensor_amax_of(*sn) || block_of(sn).whole_tensor(p.rank())) return 4;
  }
  return 0;
}

}  // namespace

/// A pipeline ready to run on any GPU of the process (one compiled Kernel per architecture) and
/// on the CPU. Thread-safe.
class PyKernel {
 public:
  explicit PyKernel(Pipeline p) : pipeline_(std::move(p)), workspace_(pipeline_workspace_bytes(pipeline_)) {}

  const Pipeline& pipeline() const { return pipeline_; }
  size_t workspace_bytes() const { return workspace_; }

  /// The Kernel for `arch`, compiled (and loaded when a GPU is present) on first use.
  /// Call without the GIL.
  const Kernel& for_arch(const std::string& arch) {
    {
      std::lock_guard lock(mutex_);
      auto it = by_arch_.find(arch);
      if (it != by_arch_.end()) return it->second;
    }
    Kernel k = jit(pipeline_, Target::parse(arch));
    if (k.workspace_bytes() != workspace_)
      throw Error("mxjit._mxjit: the binding's workspace size disagrees with Kernel::workspace_bytes()");
    std::lock_guard lock(mutex_);
    return by_arch_.emplace(arch, std::move(k)).first->second;  // a racing twin's copy is dropped (not unloaded)
  }

  void launch(uint64_t stream, int device, nb::handle ptrs, nb::handle shapes, nb::handle strides, uint64_t workspace,
              nb::handle dtypes) {
    Views v = make_views(pipeline_, ptrs, shapes, strides, dtypes, DeviceKind::cuda, device);
    check_ordinal(device);
    nb::gil_scoped_release nogil;
    Driver& d = Driver::get();
    DeviceSlot& slot = device_slot(device);
    ContextGuard context(d, slot);
    CaptureRelax relax(d, stream);
    for_device(device, slot)(stream, v.in, v.out, workspace);
  }

  /// The Kernel of GPU `device`'s architecture (compiled and loaded on first use). Call without the GIL.
  const Kernel& for_device(int device, const DeviceSlot& slot) {
    const Kernel* k = per_device_[size_t(device)].load(std::memory_order_acquire);
    if (!k) {
      k = &for_arch(slot.arch);
      per_device_[size_t(device)].store(k, std::memory_order_release);
    }
    return *k;
  }

  /// Microseconds per Kernel::operator() call in a C++ loop on these views (bench/python only).
  double bench_dispatch_us(uint64_t stream, int device, nb::handle ptrs, nb::handle shapes, nb::handle strides,
                           uint64_t workspace, int iters, int reps) {
    Views v = make_views(pipeline_, ptrs, shapes, strides, nb::none(), DeviceKind::cuda, device);
    check_ordinal(device);
    nb::gil_scoped_release nogil;
    Driver& d = Driver::get();
    DeviceSlot& slot = device_slot(device);
    ContextGuard context(d, slot);
    const Kernel& k = for_arch(slot.arch);
    std::vector<double> per;
    for (int r = 0; r <= reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) k(stream, v.in, v.out, workspace);
      const auto t1 = std::chrono::steady_clock::now();
      if (r > 0) per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);  // r 0: warm-up
      Stream::wrap(stream).synchronize();
    }
    std::sort(per.begin(), per.end());
    return per[per.size() / 2];
  }

  std::string run_host(nb::handle ptrs, nb::handle shapes, nb::handle strides, nb::handle dtypes, int threads) {
    Views v = make_views(pipeline_, ptrs, shapes, strides, dtypes, DeviceKind::cpu, 0);
    nb::gil_scoped_release nogil;
    // The caller's mistakes are errors on every backend: checked before the JIT is tried, so that
    // only "not lowered by the CPU backend" falls back to the reference.
    detail::check_bindings(pipeline_, v.in, v.out, DeviceKind::cpu);
#if MXJIT_HAVE_LLVM
    if (const cpu::CpuKernel* ck = cpu_kernel()) {
      try {
        (*ck)(v.in, v.out, threads);
        return "llvm";
      } catch (const UsageError&) {
        // A stride class this backend does not lower: the reference below.
      }
    }
#else
    (void)threads;
#endif
    reference::run(pipeline_, v.in, v.out);
    return "reference";
  }

  /// Why the CPU backend is not used for this pipeline ("" when it is).
  std::string host_backend_note() {
#if MXJIT_HAVE_LLVM
    nb::gil_scoped_release nogil;
    cpu_kernel();
    std::lock_guard lock(mutex_);
    return cpu_note_;
#else
    return "this mxjit was built without the LLVM CPU backend";
#endif
  }

 private:
#if MXJIT_HAVE_LLVM
  const cpu::CpuKernel* cpu_kernel() {
    std::lock_guard lock(mutex_);
    if (!cpu_tried_) {
      cpu_tried_ = true;
      if (!cpu::cpu_backend_available()) {
        cpu_note_ = "the LLVM CPU backend is unavailable: " + cpu::cpu_backend_unavailable_reason();
      } else {
        try {
          cpu_ = cpu::cpu_jit(pipeline_);
        } catch (const UsageError& e) {
          cpu_note_ = e.what();
        }
      }
    }
    return cpu_ ? &*cpu_ : nullptr;
  }
  std::optional<cpu::CpuKernel> cpu_;
  bool cpu_tried_ = false;
  std::string cpu_note_;
#endif
  Pipeline pipeline_;
  size_t workspace_;
  std::mutex mutex_;
  std::map<std::string, Kernel> by_arch_;  // node-based: references stay valid
  std::array<std::atomic<const Kernel*>, kMaxDevices> per_device_{};
};

/// One launch geometry of a PyKernel on one GPU (Kernel.prepare): the views' extents, strides and
/// dtypes, checked on the first launch of each 16-byte alignment class of the inputs (which picks the
/// kernel) and prepared (Kernel::prepare); later launches only check and patch the pointers
/// (PreparedLaunch). The fast path holds the GIL (a launch does not block) and allocates nothing.
class PyPrepared {
 public:
  static constexpr size_t kMaxPointers = 32;
  static constexpr size_t kMaskInputs = 6;  // inputs whose alignment bits pick a slot (more: Kernel::operator())

  PyPrepared(nb::object owner, PyKernel& k, int device, Views geometry)
      : owner_(std::move(owner)), k_(k), device_(device), views_(std::move(geometry)),
        n_(views_.in.size() + views_.out.size()) {}

  size_t pointers() const { return n_; }

  void launch(uint64_t stream, nb::handle ptrs, uint64_t workspace) {
    uint64_t p[kMaxPointers];
    PyObject* seq = ptrs.ptr();
    if (seq_size(seq, "ptrs") != Py_ssize_t(n_))
      throw UsageError("launch: ptrs needs one device address per input and output (" + std::to_string(views_.in.size()) +
                       " + " + std::to_string(views_.out.size()) + "), got " + std::to_string(seq_size(seq, "ptrs")));
    for (size_t i = 0; i < n_; ++i) p[i] = uint64_t(as_i64(item(seq, Py_ssize_t(i)), "ptrs"));
    const std::span<const uint64_t> all(p, n_);
    Driver& d = Driver::get();
    DeviceSlot& slot = device_slot(device_);
    ContextGuard context(d, slot);
    if (views_.in.size() > kMaskInputs) return slow(stream, all, workspace, slot);
    unsigned mask = 0;
    for (size_t i = 0; i < views_.in.size(); ++i) mask |= unsigned(p[i] % 16 == 0) << i;
    const PreparedLaunch* pl = by_mask_[mask].load(std::memory_order_acquire);
    if (!pl) pl = prepare(stream, all, mask, slot);
    (*pl)(stream, all, workspace);
  }

 private:
  // Views of the geometry at `ptrs`.
  Views at(std::span<const uint64_t> ptrs) const {
    Views v = views_;
    for (size_t i = 0; i < n_; ++i)
      (i < v.in.size() ? v.in[i] : v.out[i - v.in.size()]).data =
          reinterpret_cast<void*>(static_cast<uintptr_t>(ptrs[i]));
    return v;
  }

  // First launch of an alignment class: checks every view, compiles or loads on a miss (GIL released;
  // relaxed capture mode while `stream` captures), and keeps the prepared launch for the class.
  const PreparedLaunch* prepare(uint64_t stream, std::span<const uint64_t> ptrs, unsigned mask, DeviceSlot& slot) {
    const Views v = at(ptrs);
    nb::gil_scoped_release nogil;
    Driver& d = Driver::get();
    CaptureRelax relax(d, stream);
    PreparedLaunch pl = k_.for_device(device_, slot).prepare(v.in, v.out);
    std::lock_guard lock(mutex_);
    if (const PreparedLaunch* kept = by_mask_[mask].load(std::memory_order_acquire)) return kept;
    const PreparedLaunch* kept = &kept_.emplace_back(std::move(pl));
    by_mask_[mask].store(kept, std::memory_order_release);
    return kept;
  }

  void slow(uint64_t stream, std::span<const uint64_t> ptrs, uint64_t workspace, DeviceSlot& slot) {
    const Views v = at(ptrs);
    nb::gil_scoped_release nogil;
    CaptureRelax relax(Driver::get(), stream);
    k_.for_device(device_, slot)(stream, v.in, v.out, workspace);
  }

  nb::object owner_;  // the Python Kernel, kept alive
  PyKernel& k_;
  int device_;
  Views views_;  // data null
  size_t n_;
  std::mutex mutex_;
  std::deque<PreparedLaunch> kept_;  // stable addresses
  std::array<std::atomic<const PreparedLaunch*>, size_t(1) << kMaskInputs> by_mask_{};
};

namespace {

// Runs `work(i)` for i in [0, n) on up to `threads` threads (0: one per core); rethrows the first error.
template <class F>
void parallel_for(size_t n, int threads, F work) {
  size_t t = threads > 0 ? size_t(threads) : std::max<size_t>(1, std::thread::hardware_concurrency());
  t = std::min(t, n);
  std::atomic<size_t> next{0};
  std::exception_ptr first;
  std::mutex err_mutex;
  auto body = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(err_mutex);
        if (!first) first = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < t; ++k) pool.emplace_back(body);
  body();
  for (std::thread& th : pool) th.join();
  if (first) std::rethrow_exception(first);
}

nb::dict cache_stats() {
  cache::DiskCache& c = detail::disk_cache();
  const cache::CacheStats s = c.stats();
  nb::dict d;
  d["enabled"] = c.enabled();
  d["file"] = c.file().string();
  d["disk_hits"] = s.disk_hits;
  d["disk_misses"] = s.disk_misses;
  d["mem_hits"] = s.mem_hits;
  d["mem_misses"] = s.mem_misses;
  d["compiles"] = s.writes;  // every cacheable NVRTC compile ends in one write
  d["compile_ms_saved"] = s.compile_ms_saved;
  return d;
}

}  // namespace

void bind_kernels(nb::module_& m) {
  nb::class_<PyKernel>(m, "Kernel",
                       "A pipeline ready to launch on any GPU (compiled per architecture on first use) or run on "
                       "the CPU. Made by jit().")
      .def_prop_ro("pipeline", &PyKernel::pipeline)
      .def_prop_ro("workspace_bytes", &PyKernel::workspace_bytes,
                   "Bytes of device scratch a launch needs (NVFP4: 4, 16-byte aligned; else 0).")
      .def("launch", &PyKernel::launch, nb::arg("stream"), nb::arg("device"), nb::arg("ptrs"), nb::arg("shapes"),
           nb::arg("strides"), nb::arg("workspace") = 0, nb::arg("dtypes") = nb::none(),
           "Launches on the CUstream `stream` (an int) of GPU `device`. ptrs/shapes/strides: one entry per "
           "input then output (device addresses; extents; strides in elements); dtypes: DType per entry, "
           "default as declared. Every view is checked first (UsageError names the argument).")
      .def("prepare",
           [](nb::handle self, int device, nb::handle shapes, nb::handle strides, nb::handle dtypes) {
             PyKernel& k = nb::cast<PyKernel&>(self);
             check_ordinal(device);
             const Py_ssize_t n = seq_size(shapes.ptr(), "shapes");
             nb::tuple none = nb::steal<nb::tuple>(PyTuple_New(n));
             for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(none.ptr(), i, PyLong_FromLong(0));
             Views v = make_views(k.pipeline(), none, shapes, strides, dtypes, DeviceKind::cuda, device);
             if (v.in.size() + v.out.size() > PyPrepared::kMaxPointers)
               throw UsageError("prepare: more than " + std::to_string(PyPrepared::kMaxPointers) + " tensors");
             return new PyPrepared(nb::borrow(self), k, device, std::move(v));
           },
           nb::arg("device"), nb::arg("shapes"), nb::arg("strides"), nb::arg("dtypes") = nb::none(),
           "A Prepared launch of this geometry on GPU `device` (shapes/strides/dtypes as launch takes them): "
           "its launch(stream, ptrs) checks the views once per alignment class, then only the pointers.")
      .def("run_host", &PyKernel::run_host, nb::arg("ptrs"), nb::arg("shapes"), nb::arg("strides"),
           nb::arg("dtypes") = nb::none(), nb::arg("threads") = 0,
           "Runs on host memory: the LLVM CPU backend when built and it lowers the pipeline, else the reference. "
           "Returns 'llvm' or 'reference'.")
      .def("_bench_dispatch_us", &PyKernel::bench_dispatch_us, nb::arg("stream"), nb::arg("device"), nb::arg("ptrs"),
           nb::arg("shapes"), nb::arg("strides"), nb::arg("workspace") = 0, nb::arg("iters") = 2000,
           nb::arg("reps") = 5, "Microseconds per Kernel launch in a C++ loop on these views (measurement aid).")
      .def("host_backend_note", &PyKernel::host_backend_note,
           "Why run_host uses the reference for this pipeline ('' when it uses the LLVM backend).")
      .def("compile", [](PyKernel& k, const std::string& arch) {
             nb::gil_scoped_release nogil;
             k.for_arch(arch);
           }, nb::arg("arch"),
           "Compiles (through the caches) for `arch` ('sm_90a', 'sm_100a', ...); loads too when a GPU is present.")
      .def("source", [](PyKernel& k, const std::string& arch) {
             nb::gil_scoped_release nogil;
             return k.for_arch(arch).source();
           }, nb::arg("arch"), "The generated CUDA C++ for the default (contiguous) stride class.");

  nb::class_<PyPrepared>(m, "Prepared",
                         "Kernel.launch for one geometry (Kernel.prepare): per launch only the pointers are checked.")
      .def_prop_ro("pointers", &PyPrepared::pointers, "Device addresses a launch takes (inputs, then outputs).")
      .def("launch", &PyPrepared::launch, nb::arg("stream"), nb::arg("ptrs"), nb::arg("workspace") = 0,
           "Launches on the CUstream `stream` with the tensors at `ptrs` (ints: inputs, then outputs). A bad "
           "pointer (null, misaligned, overlapping) raises UsageError naming the argument; nothing is launched.");

  m.def("jit", [](const Pipeline& p) { return new PyKernel(p); }, nb::arg("pipeline"),
        "A Kernel for `pipeline`; compiles lazily per GPU architecture (see warmup and Kernel.compile).");
  m.def("warmup",
        [](std::vector<PyKernel*> kernels, std::vector<std::string> archs, std::vector<int> devices, int threads) {
          std::vector<std::pair<PyKernel*, std::string>> work;
          std::vector<int> work_device;
          {
            nb::gil_scoped_release nogil;
            for (int dev : devices) {
              const std::string& arch = device_slot(dev).arch;
              for (PyKernel* k : kernels) work.emplace_back(k, arch), work_device.push_back(dev);
            }
            for (const std::string& a : archs)
              for (PyKernel* k : kernels) work.emplace_back(k, a), work_device.push_back(-1);
            parallel_for(work.size(), threads, [&](size_t i) {
              std::optional<ContextGuard> context;
              if (work_device[i] >= 0) context.emplace(Driver::get(), device_slot(work_device[i]));
              work[i].first->for_arch(work[i].second);
            });
          }
        },
        nb::arg("kernels"), nb::kw_only(), nb::arg("archs") = std::vector<std::string>{},
        nb::arg("devices") = std::vector<int>{}, nb::arg("threads") = 0,
        "Compiles `kernels` ahead of use, in parallel with the GIL released: for each GPU ordinal in `devices` "
        "(compiled for its architecture and loaded) and each arch string in `archs` (compiled only; no GPU "
        "needed). Cached kernels are read from SQLite instead of compiled.");

  m.def("swizzle_scales",
        [](int device, uint64_t stream, uint64_t src, std::vector<int64_t> shape, std::vector<int64_t> strides,
           uint64_t dst, const Layout& layout) {
          const bool cuda = device >= 0;
          const DeviceKind kind = cuda ? DeviceKind::cuda : DeviceKind::cpu;
          TensorView lin = TensorView::strided(reinterpret_cast<void*>(static_cast<uintptr_t>(src)), DType::u8, shape,
                                               strides, kind, cuda ? device : 0);
          const int64_t n = swizzled_size(shape, layout);
          TensorView blk = TensorView::contiguous(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), DType::u8, {n},
                                                  kind, cuda ? device : 0);
          nb::gil_scoped_release nogil;
          if (!cuda) return swizzle_scales(lin, blk, layout, 0);
          Driver& d = Driver::get();
          ContextGuard context(d, device_slot(device));
          CaptureRelax relax(d, stream);
          swizzle_scales(lin, blk, layout, stream);
        },
        nb::arg("device"), nb::arg("stream"), nb::arg("src"), nb::arg("shape"), nb::arg("strides"), nb::arg("dst"),
        nb::arg("layout") = Layout::blocked_128x4(),
        "Writes linear u8 scales [..., R, C] (any strides; device -1: host memory) into the blocked layout at "
        "`dst` (swizzled_size bytes), padding zero; on GPU `device`, on `stream`.");
  m.def("swizzled_size", [](std::vector<int64_t> shape, const Layout& layout) { return swizzled_size(shape, layout); },
        nb::arg("shape"), nb::arg("layout") = Layout::blocked_128x4());
  m.def("gpu_available", &gpu_available, "True when a CUDA driver and at least one GPU are present.");
  m.def("gpu_unavailable_reason", &gpu_unavailable_reason);
  m.def("device_arch", [](int device) {
    nb::gil_scoped_release nogil;
    return device_slot(device).arch;
  }, nb::arg("device"), "The exact NVRTC architecture of GPU `device` (e.g. 'sm_90a').");
  m.def("make_current", [](int device) {
    nb::gil_scoped_release nogil;
    make_primary_current(Driver::get(), device_slot(device));
  }, nb::arg("device"), "Makes GPU `device`'s primary context current on the calling thread.");
  m.def("cpu_backend", [] {
#if MXJIT_HAVE_LLVM
    return cpu::cpu_backend_available() ? std::string("llvm") : std::string("reference");
#else
    return std::string("reference");
#endif
  }, "'llvm' when the LLVM CPU backend is built and usable, else 'reference'.");
  m.def("cache_stats", &cache_stats,
        "This process's kernel-cache counters: disk hits/misses, in-memory hits/misses, NVRTC compiles.");
}

}  // namespace mxjit::python
