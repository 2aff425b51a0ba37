#pragma once
/// \file Running a cast pipeline for the tool: on the CPU reference or on the GPU, from host
/// input views to host copies of every output, and from an output to the array `.npy` holds.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsl/geometry.hpp"
#include "runtime/tensor.hpp"
#include "tools/mxjit/npy.hpp"

namespace mxjit::tool {

/// One output of a run, copied to host memory: its bytes in the layout the pipeline asked for.
struct HostOutput {
  std::string name;         ///< the pipeline's output name (q, s, q1, s1, amax)
  DType dtype = DType::u8;  ///< storage type
  OutputGeometry geometry;  ///< shape, strides and size of the view the kernel wrote
  std::vector<uint8_t> storage;  ///< geometry.storage_bytes bytes
};

/// Where to run.
enum class Device : uint8_t { cpu, gpu };

/// Inputs of one run: host views following p.inputs(), the domain extents and group count.
struct RunInputs {
  std::vector<TensorView> views;  ///< host views (any strides), in p.inputs() order
  std::vector<int64_t> domain;    ///< the cast input's extents
  int64_t groups = 0;             ///< extent of the offsets input, 0 without groups
};

/// Runs `p` on the CPU reference executor.
std::vector<HostOutput> run_on_cpu(const Pipeline& p, const RunInputs& in);

/// Runs `p` on the host with the LLVM CPU backend (threads: 0 = all cores) when it is built and
/// lowers the pipeline, else on the reference with one notice line; `used` says which.
std::vector<HostOutput> run_on_host(const Pipeline& p, const RunInputs& in, int threads, std::string& used);

/// Compiles `p` for GPU 0 (through the caches), uploads the inputs with their strides, launches
/// and downloads every output. Throws UsageError when the GPU generator cannot run `p`.
std::vector<HostOutput> run_on_gpu(const Pipeline& p, const RunInputs& in);

/// True when the GPU generator accepts `p` for GPU 0; otherwise false with the generator's
/// reason in `why` (e.g. NVFP4 two-level scaling). Compiles (or finds) the kernel as a side effect.
bool gpu_accepts(const Pipeline& p, std::string& why);

/// The array an output is written as: the tensor the kernel's view describes (the logical
/// tensor, FP4 codes packed two per byte along geometry.packed_axis; for blocked scale layouts
/// the 1-D padded storage), gathered into C order whatever layout the kernel wrote.
NpyArray to_npy(const HostOutput& out);

}  // namespace mxjit::tool
