// libFuzzer target: the tool's .npy reader (tools/mxjit/npy.hpp). Any bytes must either decode
// or throw NpyError; a decoded array must hold exactly its shape's bytes and survive an
// encode/decode round trip unchanged; read_npy (which reads the header first, then the data) must
// agree with decode_npy on the same bytes in a file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "tools/mxjit/npy.hpp"

using mxjit::tool::NpyArray;

namespace {

/// read_npy of `bytes` in an in-memory file, or nullopt when it throws NpyError.
std::optional<NpyArray> read_as_file(std::string_view bytes) {
  static const int fd = memfd_create("fuzz_npy", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) std::abort();
  try {
    return mxjit::tool::read_npy("/proc/self/fd/" + std::to_string(fd));
  } catch (const mxjit::tool::NpyError&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::optional<NpyArray> f = read_as_file(bytes);
  NpyArray a;
  try {
    a = mxjit::tool::decode_npy(bytes, "fuzz.npy");
  } catch (const mxjit::tool::NpyError&) {
    if (f) {
      std::fprintf(stderr, "read_npy accepted what decode_npy refused\n");
      std::abort();
    }
    return 0;
  }
  if (!f || f->type != a.type || f->shape != a.shape || f->fortran_order != a.fortran_order || f->data != a.data) {
    std::fprintf(stderr, "read_npy and decode_npy disagree\n");
    std::abort();
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
