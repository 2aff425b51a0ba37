#pragma once
/// \file A Kernel's launch prepared for one geometry (Kernel::prepare): everything that depends on
/// extents, strides, dtypes and the inputs' 16-byte alignment class is checked and computed once;
/// each launch then checks only what depends on the pointers and patches them in.
///
///   Kernel::prepare(views), once                  PreparedLaunch(stream, ptrs, workspace), per launch
///   -------------------------------------------   ----------------------------------------------------
///   every binding rule (check_bindings)           null and element-aligned pointers, the alignment
///   stride class -> loaded kernel and its plan     class unchanged, no overlaps (precomputed spans)
///   grid (persistent: CTAs resident), smem opt-in  copy the words, patch the pointer slots
///   parameter words with the pointer slots marked  zero-fill memsets, the pre-pass, cuLaunchKernel
///   zero-fill byte counts, the pre-pass prepared
///
/// A pointer that breaks a rule is reported with Kernel::operator()'s message: the views are
/// rebuilt with the pointers and checked in full.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace mxjit {

class PreparedLaunch;
namespace detail {
struct PreparedParts;
/// Builds the launch Kernel::prepare checked (runtime/prepared_parts.hpp).
PreparedLaunch make_prepared(PreparedParts&& parts);
}  // namespace detail

/// One Kernel launch geometry, checked and laid out (Kernel::prepare). Cheap to copy; thread-safe.
class PreparedLaunch {
 public:
  /// An empty launch: calling it throws UsageError.
  PreparedLaunch() = default;
  /// Pointers a launch takes: one per input, then one per output, in the views' order.
  size_t pointers() const;
  /// Words of the kernel's parameter block (8 bytes each).
  size_t words() const;
  /// True when `ptrs` give every input the alignment class this launch was prepared for (whether
  /// a base address is 16-byte aligned picks the kernel's vector loads); else prepare again.
  bool fits(std::span<const uint64_t> ptrs) const;
  /// Launches on `stream` with the views' data at `ptrs` (device addresses, inputs then outputs)
  /// and the workspace (see Kernel::workspace_bytes) in the context current when it was prepared.
  /// A pointer that is null, misaligned for its element, of another alignment class (fits()) or
  /// makes an output overlap a tensor throws UsageError naming the argument; nothing is launched.
  void operator()(uint64_t stream, std::span<const uint64_t> ptrs, uint64_t workspace = 0) const;
  /// The parameter words a launch with `ptrs` passes, after the same checks, into `out` (words()
  /// long); no driver call, so it runs without a GPU (tests, bench/launch_host).
  void fill_words(std::span<const uint64_t> ptrs, uint64_t workspace, std::span<int64_t> out) const;

  struct State;

 private:
  friend PreparedLaunch detail::make_prepared(detail::PreparedParts&& parts);
  explicit PreparedLaunch(std::shared_ptr<const State> s);
  std::shared_ptr<const State> state_;
};

}  // namespace mxjit
