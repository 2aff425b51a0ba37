// libFuzzer target: the tool's .npy reader (tools/mxjit/npy.hpp). Any bytes must either decode
// or throw NpyError; a decoded array must hold exactly its shape's bytes and survive an
// encode/decode round trip unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tools/mxjit/npy.hpp"

using mxjit::tool::NpyArray;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  NpyArray a;
  try {
    a = mxjit::tool::decode_npy(bytes, "fuzz.npy");
  } catch (const mxjit::tool::NpyError&) {
    return 0;
  }
  if (a.data.size() != size_t(a.numel()) * mxjit::tool::npy_type_size(a.type) || a.data.size() > size) {
    std::fprintf(stderr, "decoded data size %zu does not match the shape\n", a.data.size());
    std::abort();
  }
  const NpyArray b = mxjit::tool::decode_npy(mxjit::tool::encode_npy(a), "re-encoded");
  if (b.type != a.type || b.shape != a.shape || b.fortran_order != a.fortran_order || b.data != a.data) {
    std::fprintf(stderr, "encode/decode round trip changed the array\n");
    std::abort();
  }
  return 0;
}
