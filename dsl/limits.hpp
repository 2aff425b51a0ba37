#pragma once
/// \file The size limits mxjit enforces, and the overflow-checked arithmetic that every extent,
/// block, tile and storage-size computation goes through. Beyond a limit is a UsageError naming
/// what and the limit, never an integer overflow, a huge allocation or a hang.
///
///   what                                   limit     checked when
///   elements of one tensor                 2^40      a view is bound (launch, reference run)
///     (inputs, outputs, an output's storage          and an output's geometry is computed
///      with its padding)
///   block size along an axis               2^40      the blocks are declared (blocks(), dequantize())
///   outputs of one pipeline                16        pipeline() and the text form's parser
///   nodes of one expression, as a tree     4096      each DSL builder (shared subexpressions
///   depth of one expression                256       count at every use)
///
/// An empty tensor (some extent 0) holds 0 elements whatever its other extents, which may be any
/// int64: its outputs are empty and every backend returns without touching memory. A block
/// longer than its axis is one block holding the whole axis (the tail rule of docs/numerics.md);
/// a backend whose tiles cannot hold such a block refuses the pipeline when it is compiled
/// (UsageError naming its limit), whatever the extents.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mxjit {

/// Most elements one tensor may hold: inputs, outputs, and an output's storage with padding.
inline constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Largest block size along one axis.
inline constexpr int64_t kMaxBlockSize = kMaxElements;
/// Most outputs one pipeline may have (8 casts of codes and scales).
inline constexpr int kMaxOutputs = 16;
/// Most nodes one expression may have, counting a shared subexpression at every use (what
/// printing, hashing and code generation walk).
inline constexpr int64_t kMaxExpressionNodes = 4096;
/// Deepest nesting of one expression.
inline constexpr int kMaxExpressionDepth = 256;

/// "2^40" for a power of two, else the decimal value (for messages).
std::string limit_text(int64_t limit);

/// a * b for a, b >= 0, or nullopt when it exceeds INT64_MAX.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
/// a + b for a, b >= 0, or nullopt when it exceeds INT64_MAX.
std::optional<int64_t> checked_add(int64_t a, int64_t b);
/// ceil(a / b) for a >= 0, b >= 1, without the overflow of (a + b - 1) / b.
int64_t ceil_div(int64_t a, int64_t b);
/// a rounded up to a multiple of m (a >= 0, m >= 1), or nullopt when it exceeds INT64_MAX.
std::optional<int64_t> checked_round_up(int64_t a, int64_t m);

/// Elements of a tensor of extents `shape` (all >= 0): 0 when some extent is 0, whatever the
/// others; the product otherwise, or nullopt when it exceeds kMaxElements.
std::optional<int64_t> element_count(std::span<const int64_t> shape);
/// element_count(shape), or UsageError "<what>: extents [..] hold more than 2^40 elements, ...".
int64_t checked_element_count(std::string_view what, std::span<const int64_t> shape);

}  // namespace mxjit
