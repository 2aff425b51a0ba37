#include "tools/mxjit/npy.hpp"

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/limits.hpp"

namespace mxjit::tool {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreambleV1 = 10;  // magic(6) + version(2) + header length(2)
constexpr size_t kPreambleV2 = 12;  // magic(6) + version(2) + header length(4)
constexpr size_t kAlign = 64;

struct TypeInfo {
  NpyType type;
  std::string_view descr;
  size_t size;
};
constexpr TypeInfo kTypes[] = {
    {NpyType::u1, "|u1", 1}, {NpyType::u2, "<u2", 2}, {NpyType::f2, "<f2", 2},
    {NpyType::f4, "<f4", 4}, {NpyType::i4, "<i4", 4},
};
constexpr std::string_view kSupported = "<u2 (bf16 bits), <f2, <f4, <i4 or |u1";

/// A printable excerpt of untrusted text for messages (control bytes escaped, length capped).
std::string excerpt(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x20 && u < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 40) out += "...";
  return out;
}

/// The header dict `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`, parsed by a
/// recursive-descent reader of exactly the Python literal subset NumPy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view what) : s_(text), what_(what) {}

  NpyArray parse() {
    NpyArray a;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{', "the header must be a Python dict starting with '{'");
    for (;;) {
      skip_space();
      if (peek() == '}') { ++i_; break; }
      const std::string key = parse_string("a quoted key");
      skip_space();
      expect(':', fmt::format("expected ':' after key '{}'", excerpt(key)));
      skip_space();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr'");
        have_descr = true;
        if (peek() == '[') fail("structured dtypes (a list descr) are not supported; expected one of " +
                                std::string(kSupported));
        a.type = parse_descr(parse_string("a quoted dtype descr such as '<f4'"));
      } else if (key == "fortran_order") {
        if (have_order) fail("duplicate key 'fortran_order'");
        have_order = true;
        a.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape'");
        have_shape = true;
        a.shape = parse_shape();
      } else {
        fail(fmt::format("unexpected key '{}' (a .npy header has descr, fortran_order and shape)", excerpt(key)));
      }
      skip_space();
      if (peek() == ',') { ++i_; continue; }
      skip_space();
      expect('}', "expected ',' or '}' after a value");
      break;
    }
    skip_space();
    if (i_ != s_.size()) fail(fmt::format("unexpected '{}' after the header dict", excerpt(s_.substr(i_))));
    if (!have_descr) fail("the header has no 'descr'");
    if (!have_order) fail("the header has no 'fortran_order'");
    if (!have_shape) fail("the header has no 'shape'");
    return a;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw NpyError(fmt::format("{}: malformed .npy header at byte {} of the dict: {}", what_, i_, msg));
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c, const std::string& msg) {
    if (peek() != c || i_ >= s_.size()) fail(msg);
    ++i_;
  }

  std::string parse_string(const char* expected) {
    const char q = peek();
    if (q != '\'' && q != '"') fail(fmt::format("expected {}", expected));
    const size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') fail("escapes in header strings are not supported");
      ++i_;
    }
    if (i_ >= s_.size()) fail("unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }

  bool parse_bool() {
    if (s_.substr(i_).starts_with("True")) { i_ += 4; return true; }
    if (s_.substr(i_).starts_with("False")) { i_ += 5; return false; }
    fail("fortran_order must be True or False");
  }

  NpyType parse_descr(const std::string& d) {
    for (const TypeInfo& t : kTypes)
      if (t.descr == d || (t.size == 1 && d == "<u1")) return t.type;
    if (d.size() >= 2 && d[0] == '>')
      throw NpyError(fmt::format("{}: big-endian dtype '{}' is not supported; save it little-endian "
                                 "(e.g. arr.astype('<{}'))", what_, excerpt(d), excerpt(d.substr(1))));
    throw NpyError(fmt::format("{}: unsupported dtype '{}' (expected {})", what_, excerpt(d), kSupported));
  }

  int64_t parse_extent() {
    if (peek() == '-') fail("negative extent in 'shape'");
    if (peek() < '0' || peek() > '9') fail("expected a non-negative integer extent in 'shape'");
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const auto digit = static_cast<uint64_t>(peek() - '0');
      if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - digit) / 10) fail("extent in 'shape' overflows int64");
      v = v * 10 + digit;
      ++i_;
    }
    if (peek() == 'L') ++i_;  // Python 2 long literal, as old NumPy wrote
    return int64_t(v);
  }

  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(', "shape must be a tuple such as (3, 4)");
    for (;;) {
      skip_space();
      if (peek() == ')') { ++i_; break; }
      if (shape.size() >= kMaxNpyRank) fail(fmt::format("shape has more than {} axes", kMaxNpyRank));
      shape.push_back(parse_extent());
      skip_space();
      if (peek() == ',') { ++i_; continue; }
      expect(')', "expected ',' or ')' in the shape tuple");
      break;
    }
    return shape;
  }

  std::string_view s_;
  std::string_view what_;
  size_t i_ = 0;
};

/// Elements of `shape` (extents >= 0): 0 when one is 0, whatever the others; -1 past INT64_MAX.
int64_t zero_aware_numel(const std::vector<int64_t>& shape) {
  for (int64_t e : shape)
    if (e == 0) return 0;
  int64_t n = 1;
  for (int64_t e : shape) {
    const std::optional<int64_t> p = checked_mul(n, e);
    if (!p) return -1;
    n = *p;
  }
  return n;
}

uint32_t read_le(std::string_view b, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t k = 0; k < n; ++k) v |= uint32_t(static_cast<unsigned char>(b[at + k])) << (8 * k);
  return v;
}

}  // namespace

size_t npy_type_size(NpyType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i.size;
  return 0;
}

std::string_view npy_descr(NpyType t) {
  for (const TypeInfo& i : kTypes)
    if (i.type == t) return i.descr;
  return "?";
}

int64_t NpyArray::numel() const { return std::max<int64_t>(zero_aware_numel(shape), 0); }  // decode_npy checked it

std::vector<int64_t> NpyArray::strides() const {
  // Past INT64_MAX (an empty array with huge other extents: nothing to address) strides are 0.
  std::vector<int64_t> st(shape.size(), 1);
  const size_t r = shape.size();
  for (size_t k = 1; k < r; ++k) {
    if (fortran_order)
      st[k] = checked_mul(st[k - 1], std::max<int64_t>(shape[k - 1], 1)).value_or(0);
    else
      st[r - 1 - k] = checked_mul(st[r - k], std::max<int64_t>(shape[r - k], 1)).value_or(0);
  }
  return st;
}

namespace {

/// The preamble's length (10 or 12 bytes) from the file's first bytes `start` (as many as it has,
/// up to 12); NpyError for a bad magic, an unsupported version or a file shorter than its preamble.
size_t preamble_size(std::string_view start, std::string_view what) {
  if (start.size() < kMagic.size() || start.substr(0, kMagic.size()) != kMagic)
    throw NpyError(fmt::format("{}: not a .npy file (it does not start with the magic bytes \\x93NUMPY)", what));
  if (start.size() < kPreambleV1)
    throw NpyError(fmt::format("{}: truncated .npy file ({} bytes: the preamble is incomplete)", what, start.size()));
  const int major = static_cast<unsigned char>(start[6]);
  const int minor = static_cast<unsigned char>(start[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw NpyError(fmt::format("{}: unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", what, major,
                               minor));
  const size_t preamble = major == 1 ? kPreambleV1 : kPreambleV2;
  if (start.size() < preamble)
    throw NpyError(fmt::format("{}: truncated .npy file ({} bytes: the preamble is incomplete)", what, start.size()));
  return preamble;
}

/// The header length the preamble declares, at most kMaxNpyHeaderBytes.
size_t header_length(std::string_view preamble, std::string_view what) {
  const size_t n = read_le(preamble, 8, preamble.size() == kPreambleV1 ? 2 : 4);
  if (n > kMaxNpyHeaderBytes)
    throw NpyError(fmt::format("{}: .npy header of {} bytes is larger than the {} accepted", what, n, kMaxNpyHeaderBytes));
  return n;
}

/// A parsed header: the array without its data, and how many data bytes its shape needs.
struct Header {
  NpyArray array;
  int64_t data_bytes = 0;
};

Header parse_header(std::string_view header, std::string_view what) {
  if (header.empty() || header.back() != '\n')
    throw NpyError(fmt::format("{}: malformed .npy header: it must end with a newline", what));
  Header h{HeaderParser(header.substr(0, header.size() - 1), what).parse(), 0};
  const NpyArray& a = h.array;
  const int64_t numel = zero_aware_numel(a.shape);
  if (numel < 0) throw NpyError(fmt::format("{}: shape ({}) has too many elements", what, fmt::join(a.shape, ", ")));
  const auto nbytes = checked_mul(numel, int64_t(npy_type_size(a.type)));
  if (!nbytes) throw NpyError(fmt::format("{}: shape ({}) has too many bytes", what, fmt::join(a.shape, ", ")));
  h.data_bytes = *nbytes;
  return h;
}

/// The data after the header must be exactly what the shape needs: `have` bytes follow it.
void check_data_size(const Header& h, uint64_t have, std::string_view what) {
  const NpyArray& a = h.array;
  if (uint64_t(h.data_bytes) > have)
    throw NpyError(fmt::format("{}: truncated .npy data: shape ({}) of {} needs {} bytes, the file holds {}", what,
                               fmt::join(a.shape, ", "), npy_descr(a.type), h.data_bytes, have));
  if (uint64_t(h.data_bytes) < have)
    throw NpyError(fmt::format("{}: {} unexpected bytes after the data of shape ({}) of {}", what,
                               have - uint64_t(h.data_bytes), fmt::join(a.shape, ", "), npy_descr(a.type)));
}

/// Reads up to `n` bytes into `out` (fewer only at the end of the file); NpyError on a read error.
size_t read_up_to(int fd, void* out, size_t n, const std::string& what) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, static_cast<char*>(out) + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw NpyError(fmt::format("cannot read '{}': {}", what, std::strerror(errno)));
    if (r == 0) break;
    got += size_t(r);
  }
  return got;
}

}  // namespace

NpyArray decode_npy(std::string_view bytes, std::string_view what) {
  const size_t preamble = preamble_size(bytes.substr(0, kPreambleV2), what);
  const size_t header_len = header_length(bytes.substr(0, preamble), what);
  if (bytes.size() - preamble < header_len)
    throw NpyError(fmt::format("{}: truncated .npy file: the header says {} bytes but only {} follow the preamble",
                               what, header_len, bytes.size() - preamble));
  Header h = parse_header(bytes.substr(preamble, header_len), what);
  check_data_size(h, bytes.size() - preamble - header_len, what);
  const char* p = bytes.data() + preamble + header_len;
  h.array.data.assign(reinterpret_cast<const uint8_t*>(p), reinterpret_cast<const uint8_t*>(p) + h.data_bytes);
  return std::move(h.array);
}

std::string encode_npy(const NpyArray& a) {
  for (int64_t e : a.shape)
    if (e < 0) throw NpyError(fmt::format("cannot write shape ({}): bad extents", fmt::join(a.shape, ", ")));
  const int64_t numel = zero_aware_numel(a.shape);
  if (numel < 0) throw NpyError(fmt::format("cannot write shape ({}): bad extents", fmt::join(a.shape, ", ")));
  const auto want = checked_mul(numel, int64_t(npy_type_size(a.type)));
  if (!want || uint64_t(*want) != a.data.size())
    throw NpyError(fmt::format("cannot write shape ({}) of {}: {} data bytes given", fmt::join(a.shape, ", "),
                               npy_descr(a.type), a.data.size()));
  std::string shape = "(";
  for (int64_t e : a.shape) shape += fmt::format("{}, ", e);
  if (a.shape.size() > 1) shape.resize(shape.size() - 2);
  if (a.shape.size() == 1) shape.pop_back();  // "(5,)"
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", npy_descr(a.type),
                                 a.fortran_order ? "True" : "False", shape);
  auto padded = [&](size_t pre) { return (pre + dict.size() + 1 + kAlign - 1) / kAlign * kAlign; };
  const size_t preamble = padded(kPreambleV1) - kPreambleV1 <= 65535 ? kPreambleV1 : kPreambleV2;
  const size_t total = padded(preamble);
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += char(preamble == kPreambleV1 ? 1 : 2);
  out += char(0);
  const size_t n = dict.size();
  for (size_t k = 0; k < (preamble == kPreambleV1 ? 2u : 4u); ++k) out += char((n >> (8 * k)) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  return out;
}

NpyArray read_npy(const std::filesystem::path& path) {
  const std::string what = path.string();
  // Non-blocking open: a FIFO without a writer must not block; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw NpyError(fmt::format("cannot read '{}': {}", what, std::strerror(errno)));
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) { ::close(*f); delete f; });
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw NpyError(fmt::format("cannot read '{}': {}", what, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw NpyError(fmt::format("cannot read '{}': it is a directory", what));
  if (!S_ISREG(st.st_mode))
    throw NpyError(fmt::format("cannot read '{}': it is not a regular file ({}); give a .npy file", what,
                               S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                                                             : "a socket"));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // The preamble and the header first, then exactly the bytes the header declares.
  std::string head(kPreambleV2, '\0');
  head.resize(read_up_to(fd, head.data(), head.size(), what));
  const size_t preamble = preamble_size(head, what);
  const size_t header_len = header_length(std::string_view(head).substr(0, preamble), what);
  std::string header = head.substr(preamble);
  if (header.size() > header_len) header.resize(header_len);  // a 10-byte preamble read 2 header bytes
  const size_t before = header.size();
  header.resize(header_len);
  const size_t got = before + read_up_to(fd, header.data() + before, header_len - before, what);
  if (got < header_len)
    throw NpyError(fmt::format("{}: truncated .npy file: the header says {} bytes but only {} follow the preamble",
                               what, header_len, got));
  Header h = parse_header(header, what);
  const uint64_t offset = preamble + header_len, size = uint64_t(st.st_size);
  check_data_size(h, size > offset ? size - offset : 0, what);
  h.array.data.resize(size_t(h.data_bytes));
  // The header was within the head's 12 bytes only when header_len < 3: then the data began there.
  const size_t in_head = head.size() > offset ? head.size() - offset : 0;
  std::copy(head.begin() + std::ptrdiff_t(head.size() - in_head), head.end(), h.array.data.begin());
  if (read_up_to(fd, h.array.data.data() + in_head, h.array.data.size() - in_head, what) != h.array.data.size() - in_head)
    throw NpyError(fmt::format("{}: truncated .npy data: the file shrank while it was read", what));
  char extra = 0;
  if (read_up_to(fd, &extra, 1, what) != 0)
    throw NpyError(fmt::format("{}: unexpected bytes after the data: the file grew while it was read", what));
  return std::move(h.array);
}

void write_npy(const std::filesystem::path& path, const NpyArray& a) {
  const std::string bytes = encode_npy(a);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UsageError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) throw UsageError(fmt::format("cannot write '{}': write failed (disk full?)", path.string()));
}

}  // namespace mxjit::tool
