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

/// `layout` bound to linear scales of rank `rank`: rows the axis rank-2, columns rank-1.
/// UsageError for a grouped layout (its group ends are not given) or one that does not fit.
BoundLayout bind_scales(const Layout& layout, int rank) {
  if (layout.grouped())
    throw UsageError(fmt::format("layout: {} is not a swizzle target; a grouped layout needs its group ends, which "
                                 "only a cast has", layout.str()));
  try {
    return layout.bind(rank, rank - 2, rank - 1);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("layout: {}", e.what()));
  }
}

/// The atom rows of the GPU swizzle kernel for `layout` (128 or 8; codegen/swizzle.hpp), or a
/// UsageError for a layout it has no kernel for (the host path takes any layout).
int gpu_atom_rows(const Layout& layout) {
  if (layout == Layout::blocked_128x4()) return 128;
  if (layout == Layout::blocked_8x4()) return 8;
  throw UsageError(fmt::format("layout: swizzle_scales on the GPU writes blocked128x4 or blocked8x4, not {}; swizzle "
                               "host views instead", layout.str()));
}

/// Checks both views; returns the blocked size in bytes.
int64_t check_views(const char* fn, const TensorView& linear, const TensorView& blocked, const Layout& layout) {
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
  if (linear.device == DeviceKind::cuda) gpu_atom_rows(layout);
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
  void* args[] = {w.data()};
  if (spec.tiled) {
    const int64_t rows_p = w[4], cols_p = w[5];
    const int64_t slices = bytes / (rows_p * cols_p);
    k.launch({unsigned((cols_p + detail::kSwizzleTileCols - 1) / detail::kSwizzleTileCols), unsigned(rows_p / 128),
              unsigned(std::min<int64_t>(slices, 65535))},
             {unsigned(detail::kSwizzleThreads), 1, 1}, 0, stream, args);
    return;
  }
  const int64_t blocks = std::min<int64_t>((bytes / 4 + detail::kSwizzleThreads - 1) / detail::kSwizzleThreads, 1 << 20);
  k.launch({unsigned(blocks), 1, 1}, {unsigned(detail::kSwizzleThreads), 1, 1}, 0, stream, args);
}

/// The GPU swizzle kernel for `layout` and `linear`: the tiled one for blocked128x4 where its grid
/// fits (atom rows on grid y), else the word kernel.
detail::SwizzleSpec swizzle_spec(const Layout& layout, const TensorView& linear) {
  const int ar = gpu_atom_rows(layout);
  const int64_t atom_rows = (linear.shape[size_t(linear.rank()) - 2] + 127) / 128;
  const int64_t tiles = (linear.shape.back() + detail::kSwizzleTileCols - 1) / detail::kSwizzleTileCols;
  return {false, ar, ar == 128 && atom_rows <= 65535 && tiles < (int64_t(1) << 31)};
}

}  // namespace

int64_t swizzled_size(std::span<const int64_t> shape, const Layout& layout) {
  if (shape.size() < 2)
    throw UsageError(fmt::format("swizzled_size: scales need rank >= 2 (rows, columns), got rank {}", shape.size()));
  return bind_scales(layout, int(shape.size())).size(shape);
}

namespace {

/// Linear byte offset of logical `idx` in `v`.
int64_t linear_offset(const TensorView& v, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t a = 0; a < idx.size(); ++a) off += idx[a] * v.strides[a];
  return off;
}

}  // namespace

void swizzle_scales(const TensorView& linear, const TensorView& blocked, const Layout& layout, uint64_t stream) {
  const int64_t n = check_views("swizzle_scales", linear, blocked, layout);
  if (n == 0) return;
  if (linear.device == DeviceKind::cuda) return launch(swizzle_spec(layout, linear), linear, blocked, n, stream);
  const BoundLayout l = bind_scales(layout, linear.rank());
  const auto* in = static_cast<const uint8_t*>(linear.data);
  auto* out = static_cast<uint8_t*>(blocked.data);
  for (int64_t off = 0; off < n; ++off) {  // every byte, padding zero
    const auto idx = l.index_at(off, linear.shape);
    out[off] = idx ? in[linear_offset(linear, *idx)] : 0;
  }
}

void unswizzle_scales(const TensorView& blocked, const TensorView& linear, const Layout& layout, uint64_t stream) {
  const int64_t n = check_views("unswizzle_scales", linear, blocked, layout);
  if (n == 0 || linear.numel() == 0) return;
  if (linear.device == DeviceKind::cuda) return launch({true, gpu_atom_rows(layout)}, linear, blocked, n, stream);
  const BoundLayout l = bind_scales(layout, linear.rank());
  const auto* in = static_cast<const uint8_t*>(blocked.data);
  auto* out = static_cast<uint8_t*>(linear.data);
  for (int64_t off = 0; off < n; ++off)
    if (const auto idx = l.index_at(off, linear.shape)) out[linear_offset(linear, *idx)] = in[off];
}

}  // namespace mxjit
