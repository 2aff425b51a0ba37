#include "runtime/swizzle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/key.hpp"
#include "codegen/swizzle.hpp"
#include "dsl/errors.hpp"
#include "runtime/compile.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel.hpp"
#include "runtime/module.hpp"
#include "runtime/nvrtc.hpp"

namespace mxjit {
namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// Atom rows of a swizzle layout (128 or 8); UsageError for any other layout.
int atom_rows_of(const Layout& layout) {
  if (!layout.is_blocked() || layout.is_grouped() || layout.atom_cols() != 4 ||
      (layout.atom_rows() != 128 && layout.atom_rows() != 8))
    throw UsageError(fmt::format("layout: {} is not a swizzle target; swizzle_scales writes blocked128x4 or "
                                 "blocked8x4", layout.str()));
  return layout.atom_rows();
}

/// Checks both views; returns the blocked size in bytes.
int64_t check_views(const char* fn, const TensorView& linear, const TensorView& blocked, const Layout& layout) {
  atom_rows_of(layout);
  if (linear.dtype != DType::u8)
    throw UsageError(fmt::format("{}: 'linear' must be u8 scale bytes, got {}", fn, dtype_name(linear.dtype)));
  if (blocked.dtype != DType::u8)
    throw UsageError(fmt::format("{}: 'blocked' must be u8 scale bytes, got {}", fn, dtype_name(blocked.dtype)));
  if (linear.rank() < 2 || linear.rank() > detail::kSwizzleMaxRank || linear.strides.size() != linear.shape.size())
    throw UsageError(fmt::format("{}: 'linear' must have rank 2..{} (batch axes, rows, columns), got {}", fn,
                                 detail::kSwizzleMaxRank, linear.describe()));
  for (int a = 0; a < linear.rank(); ++a) {
    if (linear.shape[size_t(a)] < 0)
      throw UsageError(fmt::format("{}: 'linear' extent {} of axis {} is negative", fn, linear.shape[size_t(a)], a));
    if (linear.numel() > 0 && (linear.strides[size_t(a)] < 0 || (linear.strides[size_t(a)] == 0 && linear.shape[size_t(a)] > 1)))
      throw UsageError(fmt::format("{}: 'linear' stride {} of axis {} is not positive", fn, linear.strides[size_t(a)], a));
  }
  const int64_t n = swizzled_size(linear.shape, layout);
  if (blocked.rank() != 1 || blocked.shape[0] != n)
    throw UsageError(fmt::format("{}: 'blocked' must be 1-D with {} bytes ({} of [{}]), got {}", fn, n, layout.str(),
                                 fmt::join(linear.shape, ","), blocked.describe()));
  if (n > 1 && blocked.strides.at(0) != 1)
    throw UsageError(fmt::format("{}: 'blocked' must be contiguous (stride 1), got stride {}", fn, blocked.strides[0]));
  if (linear.device != blocked.device || linear.device_ordinal != blocked.device_ordinal)
    throw UsageError(fmt::format("{}: 'linear' ({}) and 'blocked' ({}) are on different devices", fn,
                                 linear.describe(), blocked.describe()));
  if ((linear.numel() > 0 && linear.data == nullptr) || (n > 0 && blocked.data == nullptr))
    throw UsageError(fmt::format("{}: '{}' data pointer is null", fn, linear.data == nullptr ? "linear" : "blocked"));
  if (blocked.device == DeviceKind::cuda && reinterpret_cast<uintptr_t>(blocked.data) % 4 != 0)
    throw UsageError(fmt::format("{}: 'blocked' must be 4-byte aligned on the GPU (the kernel moves 32-bit words)", fn));
  // Overlap: the byte ranges the two views can touch.
  if (linear.numel() > 0 && n > 0) {
    int64_t last = 0;
    for (int a = 0; a < linear.rank(); ++a) last += (linear.shape[size_t(a)] - 1) * linear.strides[size_t(a)];
    const auto lo = reinterpret_cast<uintptr_t>(linear.data), hi = lo + uintptr_t(last + 1);
    const auto blo = reinterpret_cast<uintptr_t>(blocked.data), bhi = blo + uintptr_t(n);
    if (lo < bhi && blo < hi) throw UsageError(fmt::format("{}: 'linear' and 'blocked' overlap", fn));
  }
  return n;
}

/// The blocked word -> linear placement, as the generated kernel computes it (codegen/swizzle.cpp).
struct WordMap {
  int64_t ar, lines, line_bytes, rows_p, cols_p;
  std::vector<int64_t> shape, stride;
  WordMap(const TensorView& v, int atom_rows) : ar(atom_rows), shape(v.shape), stride(v.strides) {
    lines = ar >= 32 ? 32 : ar;
    line_bytes = 4 * (ar / lines);
    rows_p = round_up(shape[shape.size() - 2], ar);
    cols_p = round_up(shape.back(), 4);
  }
  /// Linear byte offset of (batch, r, 0) for word `w`; sets r and c0.
  int64_t place(int64_t w, int64_t& r, int64_t& c0) const {
    const int64_t byte = w * 4, slice = rows_p * cols_p;
    int64_t b = byte / slice;
    const int64_t rest = byte - b * slice, atom = rest / (ar * 4), k = rest % (ar * 4);
    const int64_t per_row = cols_p / 4;
    r = (atom / per_row) * ar + ((k % line_bytes) / 4) * lines + k / line_bytes;
    c0 = (atom % per_row) * 4;
    int64_t off = 0;
    for (int a = int(shape.size()) - 3; a >= 0; --a) {
      off += (b % shape[size_t(a)]) * stride[size_t(a)];
      b /= shape[size_t(a)];
    }
    return off + r * stride[shape.size() - 2];
  }
};

/// One loaded swizzle kernel per (direction, atom, arch, device): compiled through the disk cache.
const detail::LoadedKernel& swizzle_kernel(const detail::SwizzleSpec& spec, int ordinal) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<detail::LoadedKernel>> loaded;
  const Target target = current_target(ordinal);
  const detail::SwizzleKernel g = detail::generate_swizzle(spec);
  const std::string key = fmt::format("{}/{}/{}", g.kernel_name, target.arch, ordinal);
  std::lock_guard lock(mutex);
  auto it = loaded.find(key);
  if (it != loaded.end()) return *it->second;
  cache::KeyParts parts;
  parts.generator_version = detail::kSwizzleGeneratorVersion;
  parts.source = g.source;
  parts.options = detail::nvrtc_options_text(target.arch);
  parts.arch = target.arch;
  parts.toolchain_version = detail::nvrtc_version_string();
  const Hash128 content = cache::content_key(parts);
  cache::DiskCache& disk = detail::disk_cache();
  std::string cubin;
  if (auto hit = disk.get(content)) cubin = std::move(hit->blob);
  auto compile = [&] {
    detail::NvrtcRequest req;
    req.source = g.source;
    req.file_name = g.file_name;
    req.arch = target.arch;
    detail::NvrtcOutput out = detail::nvrtc_compile(req);
    cache::CacheEntry e;
    e.key = content;
    e.kernel_name = g.kernel_name;
    e.arch = target.arch;
    e.toolchain_version = parts.toolchain_version;
    e.blob = out.cubin;
    e.compile_ms = out.compile_ms;
    disk.put(e);
    return std::move(out.cubin);
  };
  const bool from_disk = !cubin.empty();
  if (!from_disk) cubin = compile();
  std::unique_ptr<detail::LoadedKernel> k;
  try {
    k = std::make_unique<detail::LoadedKernel>(detail::LoadedKernel::load(cubin, g.kernel_name));
  } catch (const CudaError&) {
    if (!from_disk) throw;
    disk.remove(content);  // a cached cubin that fails to load is a miss
    k = std::make_unique<detail::LoadedKernel>(detail::LoadedKernel::load(compile(), g.kernel_name));
  }
  return *loaded.emplace(key, std::move(k)).first->second;
}

void launch(const detail::SwizzleSpec& spec, const TensorView& linear, const TensorView& blocked, int64_t bytes,
            uint64_t stream) {
  make_current(linear.device_ordinal);
  const detail::LoadedKernel& k = swizzle_kernel(spec, linear.device_ordinal);
  const int rank = linear.rank();
  std::vector<int64_t> w;
  w.reserve(detail::kSwizzleParamWords);
  w.push_back(int64_t(reinterpret_cast<uintptr_t>(linear.data)));
  w.push_back(int64_t(reinterpret_cast<uintptr_t>(blocked.data)));
  w.push_back(rank);
  w.push_back(bytes / 4);
  w.push_back(round_up(linear.shape[size_t(rank) - 2], spec.atom_rows));
  w.push_back(round_up(linear.shape[size_t(rank) - 1], 4));
  for (int a = 0; a < detail::kSwizzleMaxRank; ++a) w.push_back(a < rank ? linear.shape[size_t(a)] : 1);
  for (int a = 0; a < detail::kSwizzleMaxRank; ++a) w.push_back(a < rank ? linear.strides[size_t(a)] : 0);
  const int64_t blocks = std::min<int64_t>((bytes / 4 + detail::kSwizzleThreads - 1) / detail::kSwizzleThreads, 1 << 20);
  void* args[] = {w.data()};
  k.launch({unsigned(blocks), 1, 1}, {unsigned(detail::kSwizzleThreads), 1, 1}, 0, stream, args);
}

}  // namespace

int64_t swizzled_size(std::span<const int64_t> shape, const Layout& layout) {
  const int ar = atom_rows_of(layout);
  if (shape.size() < 2)
    throw UsageError(fmt::format("swizzled_size: scales need rank >= 2 (rows, columns), got rank {}", shape.size()));
  int64_t n = round_up(shape[shape.size() - 2], ar) * round_up(shape.back(), 4);
  for (size_t a = 0; a + 2 < shape.size(); ++a) n *= shape[a];
  return n;
}

void swizzle_scales(const TensorView& linear, const TensorView& blocked, const Layout& layout, uint64_t stream) {
  const int64_t n = check_views("swizzle_scales", linear, blocked, layout);
  const detail::SwizzleSpec spec{false, layout.atom_rows()};
  if (n == 0) return;
  if (linear.device == DeviceKind::cuda) return launch(spec, linear, blocked, n, stream);
  const WordMap m(linear, spec.atom_rows);
  const auto* in = static_cast<const uint8_t*>(linear.data);
  auto* out = static_cast<uint8_t*>(blocked.data);
  const int64_t R = linear.shape[size_t(linear.rank()) - 2], C = linear.shape.back(), sc = linear.strides.back();
  for (int64_t w = 0; w < n / 4; ++w) {
    int64_t r = 0, c0 = 0;
    const int64_t base = m.place(w, r, c0);
    for (int64_t j = 0; j < 4; ++j) out[4 * w + j] = r < R && c0 + j < C ? in[base + (c0 + j) * sc] : 0;
  }
}

void unswizzle_scales(const TensorView& blocked, const TensorView& linear, const Layout& layout, uint64_t stream) {
  const int64_t n = check_views("unswizzle_scales", linear, blocked, layout);
  const detail::SwizzleSpec spec{true, layout.atom_rows()};
  if (n == 0 || linear.numel() == 0) return;
  if (linear.device == DeviceKind::cuda) return launch(spec, linear, blocked, n, stream);
  const WordMap m(linear, spec.atom_rows);
  const auto* in = static_cast<const uint8_t*>(blocked.data);
  auto* out = static_cast<uint8_t*>(linear.data);
  const int64_t R = linear.shape[size_t(linear.rank()) - 2], C = linear.shape.back(), sc = linear.strides.back();
  for (int64_t w = 0; w < n / 4; ++w) {
    int64_t r = 0, c0 = 0;
    const int64_t base = m.place(w, r, c0);
    if (r >= R) continue;
    for (int64_t j = 0; j < 4 && c0 + j < C; ++j) out[base + (c0 + j) * sc] = in[4 * w + j];
  }
}

}  // namespace mxjit
