#pragma once
/// \file Non-owning views of tensors passed in and out of kernels, and their DLPack import.
#include <cstdint>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>  // DLTensor is an anonymous-struct typedef in DLPack 0.6: no forward declaration

#include "dsl/dtype.hpp"

namespace mxjit {

/// Where a tensor's memory lives.
enum class DeviceKind { cpu, cuda };

/// A non-owning strided view: data pointer, element type, shape and strides (in elements).
struct TensorView {
  void* data = nullptr;                 ///< first element (byte offsets already applied)
  DType dtype = DType::f32;             ///< element storage type
  std::vector<int64_t> shape;           ///< extent of each dimension
  std::vector<int64_t> strides;         ///< step of each dimension, in elements
  DeviceKind device = DeviceKind::cpu;  ///< memory space
  int device_ordinal = 0;               ///< GPU ordinal when device == cuda

  /// Number of dimensions.
  int rank() const { return static_cast<int>(shape.size()); }
  /// Number of elements (1 for rank 0; 0 when an extent is 0 or negative, INT64_MAX past it).
  int64_t numel() const;
  /// True when the strides are row-major contiguous (dimensions of extent 1 may have any stride).
  bool is_contiguous() const;
  /// A view with row-major contiguous strides.
  static TensorView contiguous(void* data, DType dtype, std::vector<int64_t> shape,
                               DeviceKind device = DeviceKind::cpu, int ordinal = 0);
  /// A view with explicit strides (in elements); UsageError when ranks differ or an extent is < 0.
  static TensorView strided(void* data, DType dtype, std::vector<int64_t> shape,
                            std::vector<int64_t> strides, DeviceKind device = DeviceKind::cpu,
                            int ordinal = 0);
  /// E.g. "bf16[128,64] strides [64,1] on cuda:0".
  std::string describe() const;
};

/// A view of a DLPack tensor: kDLBfloat 16, kDLFloat 16/32, kDLUInt 8, kDLInt 32/64 (and the
/// kDLFloat8_* / kDLFloat4 codes as u8 where the DLPack header has them); kDLCPU or kDLCUDA;
/// null strides mean contiguous; byte_offset is applied. UsageError names the broken rule
/// (lanes != 1, unsupported dtype or device).
TensorView from_dlpack(const DLTensor& t);

}  // namespace mxjit
