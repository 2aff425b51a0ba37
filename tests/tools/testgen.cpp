// Test helper of the `mxjit` CLI tests (tests/tools/cli_test.sh): writes .npy inputs (C or Fortran
// order, random or adversarial values), malformed .npy files, and the outputs the library's CPU
// reference gives for a spec on a C-order copy of an input — what the tool must reproduce byte for
// byte. Also runs the .npy reader/writer self-checks.
//
//   testgen input    OUT.npy bf16|f16|f32 D0,D1,.. c|f SEED [adversarial]
//   testgen fill     OUT.npy bf16|f32 D0,D1,.. HEXBITS     (every element the same bit pattern)
//   testgen offsets  OUT.npy E0,E1,..
//   testgen expect   SPEC IN.npy OUTDIR [OFFSETS.npy]
//   testgen bad      OUTDIR
//   testgen selftest
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/reference/numerics.hpp"
#include "mxjit/mxjit.hpp"
#include "tools/mxjit/cast_exec.hpp"
#include "tools/mxjit/npy.hpp"

namespace {

using mxjit::tool::NpyArray;
using mxjit::tool::NpyType;
namespace fs = std::filesystem;

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::stoll(s.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return out;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// The value of logical element `i` (C order) for `seed`: many binades, never all zero;
/// `adversarial` mixes in zeros, subnormals, +-Inf, NaN, max values, FP4 ties and huge values.
float value_at(uint64_t seed, int64_t i, bool adversarial) {
  uint64_t s = seed * 0x100000001b3ULL + uint64_t(i);
  const uint64_t r = splitmix(s);
  const float mant = 1.0f + float(r & 0xffff) / 65536.0f;
  const int ex = int((r >> 16) % 25) - 12;
  float f = std::ldexp(mant, ex) * ((r >> 40) & 1 ? -1.0f : 1.0f);
  if (adversarial) {
    const int k = int((r >> 48) % 100);
    const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.5f};
    if (k < 4) f = 0.0f;
    else if (k < 6) f = -0.0f;
    else if (k < 9) f = std::ldexp(1.0f, -130 - k);
    else if (k < 10) f = (r >> 41) & 1 ? INFINITY : -INFINITY;
    else if (k < 11) f = NAN;
    else if (k < 13) f = (r >> 41) & 1 ? 448.0f : -57344.0f;
    else if (k < 16) f = ties[(r >> 42) % 8];
    else if (k < 17) f = std::ldexp(1.0f, 100);
    else if (k < 25) f = std::ldexp(mant, -40);
  }
  return f;
}

void store(std::vector<uint8_t>& data, NpyType t, int64_t at, float f) {
  if (t == NpyType::f4) {
    std::memcpy(data.data() + 4 * at, &f, 4);
  } else if (t == NpyType::u2) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint16_t h = uint16_t(u >> 16);  // truncation keeps special values special
    std::memcpy(data.data() + 2 * at, &h, 2);
  } else {
    const uint16_t h = mxjit::reference::f32_to_f16_rne(f);  // not _Float16: clang 14 lacks it on x86
    std::memcpy(data.data() + 2 * at, &h, 2);
  }
}

int cmd_input(int argc, char** argv) {
  if (argc < 7) return 2;
  NpyArray a;
  const std::string dt = argv[3];
  a.type = dt == "bf16" ? NpyType::u2 : dt == "f16" ? NpyType::f2 : NpyType::f4;
  a.shape = parse_list(argv[4]);
  a.fortran_order = std::string(argv[5]) == "f";
  const uint64_t seed = std::stoull(argv[6]);
  const bool adversarial = argc > 7 && std::string(argv[7]) == "adversarial";
  a.data.resize(size_t(a.numel()) * mxjit::tool::npy_type_size(a.type));
  const std::vector<int64_t> st = a.strides();
  const size_t r = a.shape.size();
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < a.numel(); ++i) {  // i: C-order logical index
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += idx[k] * st[k];
    store(a.data, a.type, off, value_at(seed, i, adversarial));
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < a.shape[k]) break;
      idx[k] = 0;
    }
  }
  mxjit::tool::write_npy(argv[2], a);
  return 0;
}

int cmd_fill(int argc, char** argv) {
  if (argc < 6) return 2;
  NpyArray a;
  const bool bf16 = std::string(argv[3]) == "bf16";
  a.type = bf16 ? NpyType::u2 : NpyType::f4;
  a.shape = parse_list(argv[4]);
  const uint32_t bits = uint32_t(std::stoul(argv[5], nullptr, 16));
  const size_t es = bf16 ? 2 : 4;
  a.data.resize(size_t(a.numel()) * es);
  for (size_t i = 0; i < a.data.size(); i += es) std::memcpy(a.data.data() + i, &bits, es);  // little-endian
  mxjit::tool::write_npy(argv[2], a);
  return 0;
}

int cmd_offsets(int argc, char** argv) {
  if (argc < 4) return 2;
  NpyArray a;
  a.type = NpyType::i4;
  for (int64_t e : parse_list(argv[3])) {
    const int32_t v = int32_t(e);
    a.data.insert(a.data.end(), reinterpret_cast<const uint8_t*>(&v), reinterpret_cast<const uint8_t*>(&v) + 4);
  }
  a.shape = {int64_t(a.data.size() / 4)};
  mxjit::tool::write_npy(argv[2], a);
  return 0;
}

/// A C-order copy of `a` (the reference then reads a plain contiguous tensor).
NpyArray to_c_order(const NpyArray& a) {
  if (!a.fortran_order) return a;
  NpyArray c = a;
  c.fortran_order = false;
  const size_t es = mxjit::tool::npy_type_size(a.type);
  const std::vector<int64_t> fst = a.strides(), cst = c.strides();
  const size_t r = a.shape.size();
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < a.numel(); ++i) {
    int64_t fo = 0, co = 0;
    for (size_t k = 0; k < r; ++k) { fo += idx[k] * fst[k]; co += idx[k] * cst[k]; }
    std::memcpy(c.data.data() + co * int64_t(es), a.data.data() + fo * int64_t(es), es);
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < a.shape[k]) break;
      idx[k] = 0;
    }
  }
  return c;
}

int cmd_expect(int argc, char** argv) {
  if (argc < 5) return 2;
  const mxjit::Pipeline p = mxjit::parse_pipeline(argv[2]);
  const NpyArray x = to_c_order(mxjit::tool::read_npy(argv[3]));
  const fs::path dir = argv[4];
  fs::create_directories(dir);
  NpyArray offs;
  if (argc > 5) offs = mxjit::tool::read_npy(argv[5]);
  std::vector<mxjit::TensorView> in;
  const mxjit::DType dt = x.type == NpyType::u2 ? mxjit::DType::bf16 : x.type == NpyType::f2 ? mxjit::DType::f16
                                                                                          : mxjit::DType::f32;
  for (const mxjit::InputDecl& d : p.inputs())
    in.push_back(d.kind == mxjit::InputDecl::Kind::tensor
                     ? mxjit::TensorView::contiguous(const_cast<uint8_t*>(x.data.data()), dt, x.shape)
                     : mxjit::TensorView::contiguous(offs.data.data(), mxjit::DType::i32, offs.shape));
  const int64_t groups = offs.shape.empty() ? 0 : offs.shape[0];
  std::vector<std::vector<uint8_t>> store(p.outputs().size());
  std::vector<mxjit::TensorView> out;
  std::vector<mxjit::OutputGeometry> geo;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const mxjit::Output& po = p.outputs()[o];
    if (po.kind == mxjit::OutputKind::elems && po.layout != mxjit::Layout::row_major()) {
      std::fprintf(stderr, "testgen expect: codes output '%s' must be row_major\n", po.name.c_str());
      return 2;
    }
    geo.push_back(mxjit::output_geometry(p, int(o), x.shape, groups));
    store[o].assign(size_t(geo[o].storage_bytes), 0);
    out.push_back(mxjit::TensorView::strided(store[o].data(), po.dtype, geo[o].view_shape, geo[o].view_strides));
  }
  mxjit::reference::run(p, in, out);
  std::map<mxjit::OutputKind, int> seen;
  for (size_t o = 0; o < p.outputs().size(); ++o) {
    const mxjit::Output& po = p.outputs()[o];
    const int k = seen[po.kind]++;
    const std::string stem = po.kind == mxjit::OutputKind::elems ? "elems" : po.kind == mxjit::OutputKind::scales
                                                                                  ? "scales" : "amax";
    NpyArray a;
    a.type = po.dtype == mxjit::DType::f32 ? NpyType::f4 : po.dtype == mxjit::DType::i32 ? NpyType::i4 : NpyType::u1;
    a.shape = geo[o].view_shape;
    // The view in C order: each element from its strided place (packed words, padded layouts).
    const size_t es = mxjit::dtype_size(po.dtype), r = a.shape.size();
    int64_t n = 1;
    for (int64_t e : a.shape) n *= e;
    std::vector<int64_t> idx(r, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (size_t ax = 0; ax < r; ++ax) off += idx[ax] * geo[o].view_strides[ax];
      a.data.insert(a.data.end(), store[o].begin() + off * int64_t(es), store[o].begin() + (off + 1) * int64_t(es));
      for (size_t ax = r; ax-- > 0;) {
        if (++idx[ax] < a.shape[ax]) break;
        idx[ax] = 0;
      }
    }
    mxjit::tool::write_npy(dir / (stem + (k ? std::to_string(k) : "") + ".npy"), a);
  }
  return 0;
}

void write_raw(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

/// A v1.0 file with header dict `dict` (padded) followed by `data`.
std::string npy_with(const std::string& dict, const std::string& data) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  return out + h + data;
}

int cmd_bad(int argc, char** argv) {
  if (argc < 3) return 2;
  const fs::path d = argv[2];
  fs::create_directories(d);
  const std::string f4x8(32, '\0');
  write_raw(d / "bad_magic.npy", "PK\x03\x04 this is a zip file, not npy");
  write_raw(d / "bad_dict.npy", npy_with("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (8,), }", f4x8));
  write_raw(d / "no_shape.npy", npy_with("{'descr': '<f4', 'fortran_order': False, }", f4x8));
  write_raw(d / "i8.npy", npy_with("{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", f4x8));
  write_raw(d / "big_endian.npy", npy_with("{'descr': '>f4', 'fortran_order': False, 'shape': (8,), }", f4x8));
  write_raw(d / "truncated.npy", npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 32), }", f4x8));
  write_raw(d / "huge.npy", npy_with("{'descr': '<f4', 'fortran_order': False, "
                                     "'shape': (4611686018427387904, 4611686018427387904), }", f4x8));
  write_raw(d / "short_header.npy", std::string("\x93NUMPY\x01\x00\xff\x00{'descr'", 17));
  write_raw(d / "scalar.npy", npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::string(4, '\0')));
  write_raw(d / "u8.npy", npy_with("{'descr': '|u1', 'fortran_order': False, 'shape': (4, 8), }", f4x8));
  return 0;
}

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "selftest: %s failed (line %d)\n", #cond, __LINE__); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int cmd_selftest() {
  // Round trip of every type, C and Fortran order, including a rank-1 and an empty shape.
  for (NpyType t : {NpyType::u1, NpyType::u2, NpyType::f2, NpyType::f4, NpyType::i4})
    for (bool fortran : {false, true})
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5}, {3, 4, 2}, {0, 7}, {}}) {
        NpyArray a;
        a.type = t;
        a.shape = shape;
        a.fortran_order = fortran;
        a.data.resize(size_t(a.numel()) * mxjit::tool::npy_type_size(t));
        for (size_t i = 0; i < a.data.size(); ++i) a.data[i] = uint8_t(i * 7 + 1);
        const std::string bytes = mxjit::tool::encode_npy(a);
        CHECK(bytes.size() % 64 == a.data.size() % 64);
        const NpyArray b = mxjit::tool::decode_npy(bytes, "selftest");
        CHECK(b.type == a.type && b.shape == a.shape && b.fortran_order == a.fortran_order && b.data == a.data);
      }
  // Strides of C and Fortran order.
  NpyArray s;
  s.shape = {2, 3, 4};
  CHECK((s.strides() == std::vector<int64_t>{12, 4, 1}));
  s.fortran_order = true;
  CHECK((s.strides() == std::vector<int64_t>{1, 2, 6}));
  // to_npy gathers a column-major view into C order.
  mxjit::tool::HostOutput h;
  h.dtype = mxjit::DType::u8;
  h.geometry.view_shape = {2, 3};
  h.geometry.view_strides = {1, 2};
  h.storage = {0, 3, 1, 4, 2, 5};  // element (i,j) = 3*i + j stored at i + 2*j
  const NpyArray g = mxjit::tool::to_npy(h);
  CHECK((g.data == std::vector<uint8_t>{0, 1, 2, 3, 4, 5}) && !g.fortran_order);
  // Errors are errors, not crashes.
  bool threw = false;
  try {
    mxjit::tool::decode_npy(std::string("\x93NUMPY\x01\x00\x00\x00", 10), "empty-header");
  } catch (const mxjit::tool::NpyError&) {
    threw = true;
  }
  CHECK(threw);
  std::puts("selftest: npy round trips, strides, C-order gather, errors: ok");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    int rc = 2;
    if (cmd == "input") rc = cmd_input(argc, argv);
    else if (cmd == "offsets") rc = cmd_offsets(argc, argv);
    else if (cmd == "fill") rc = cmd_fill(argc, argv);
    else if (cmd == "expect") rc = cmd_expect(argc, argv);
    else if (cmd == "bad") rc = cmd_bad(argc, argv);
    else if (cmd == "selftest") rc = cmd_selftest();
    if (rc == 2) std::fprintf(stderr, "usage: see the comment at the top of tests/tools/testgen.cpp\n");
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "testgen: %s\n", e.what());
    return 1;
  }
}
