#pragma once
/// \file A small, careful reader and writer of NumPy `.npy` files (format versions 1.0, 2.0, 3.0).
///
/// Only what the tool exchanges is accepted: little-endian (or byte-sized) element types
/// `<u2` (bf16 raw bits), `<f2`, `<f4`, `<i4`, `|u1`; C or Fortran order; any rank. Every size
/// computation is overflow-checked, so a hostile header ("shape": (2**62, 2**62)) is an error,
/// never an allocation or an out-of-bounds read. Errors are NpyError (a UsageError) naming the
/// file and what is wrong with it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/errors.hpp"

namespace mxjit::tool {

/// A malformed, truncated or unsupported `.npy` file (the user's mistake).
class NpyError : public UsageError {
 public:
  using UsageError::UsageError;
};

/// Element types the tool reads and writes.
enum class NpyType : uint8_t {
  u1,   ///< `|u1`: MX codes and E8M0/E4M3 scales
  u2,   ///< `<u2`: bf16 stored as raw bits
  f2,   ///< `<f2`: IEEE half
  f4,   ///< `<f4`: IEEE single
  i4,   ///< `<i4`: group offsets
};

/// Bytes per element of `t`.
size_t npy_type_size(NpyType t);
/// The descr string of `t` as written to a header ("<f4", "|u1", ...).
std::string_view npy_descr(NpyType t);

/// An array read from (or to be written to) a `.npy` file.
struct NpyArray {
  NpyType type = NpyType::u1;          ///< element type
  std::vector<int64_t> shape;          ///< extents, outermost first (empty: a scalar)
  bool fortran_order = false;          ///< true: axis 0 varies fastest in `data`
  std::vector<uint8_t> data;           ///< exactly numel() * npy_type_size(type) bytes

  /// Number of elements (1 for a scalar).
  int64_t numel() const;
  /// Strides in elements of `data` for `shape` in its order (C or Fortran).
  std::vector<int64_t> strides() const;
};

/// Largest header the reader accepts (NumPy itself refuses more than 10000 bytes by default).
inline constexpr size_t kMaxNpyHeaderBytes = 1 << 16;
/// Largest rank the reader accepts.
inline constexpr size_t kMaxNpyRank = 64;

/// Parses the bytes of a whole `.npy` file. `what` names the source in messages (a path).
/// Throws NpyError: bad magic, unsupported version, truncated or malformed header dict, missing
/// or duplicate keys, unsupported descr (e.g. "<i8", ">f4"), negative or overflowing shape, data
/// shorter or longer than the header says.
NpyArray decode_npy(std::string_view bytes, std::string_view what);

/// Serialises `a` as a version 1.0 file (version 2.0 if the header needs it), header padded
/// so that the data starts at a multiple of 64 bytes. Throws NpyError when a.data's size does
/// not match the shape.
std::string encode_npy(const NpyArray& a);

/// Reads and decodes `path`: the preamble and header first, then exactly the data bytes they
/// declare, into the array's own buffer (a junk or hostile file is refused after its first 12
/// bytes, a size mismatch before any data is read). Throws NpyError: unreadable file, a
/// directory, a file that is not a regular file (a FIFO or a device such as /dev/zero), or as
/// decode_npy.
NpyArray read_npy(const std::filesystem::path& path);

/// Encodes and writes `a` to `path`. Throws UsageError naming the path when it cannot be written.
void write_npy(const std::filesystem::path& path, const NpyArray& a);

}  // namespace mxjit::tool
