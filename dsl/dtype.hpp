#pragma once
/// \file Storage types of tensors that cross the API (inputs, outputs, offsets).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mxjit {

/// How one element of a tensor is stored in memory. MX codes (FP8/FP6/FP4/INT8 payloads and
/// E8M0/E4M3 scales) are stored as `u8`; FP4 packs two codes per byte.
enum class DType : uint8_t { bf16, f16, f32, u8, i32, i64 };

/// Bytes per stored element.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::bf16: case DType::f16: return 2;
    case DType::f32: case DType::i32: return 4;
    case DType::u8: return 1;
    case DType::i64: return 8;
  }
  return 0;
}

/// Short lowercase name ("bf16", "f32", ...), as used in the text form and messages.
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

}  // namespace mxjit
