#pragma once
/// \file The schedule: how a cast is run, apart from what it computes (Halide's algorithm /
/// schedule split). Every field is optional: an unset field (0, or KernelKind::automatic) takes
/// the planner's default for the kernel that runs. A printable, parseable value:
///
///   tune()                                                     every default
///   tune(kernel=columns, rows_per_thread=8, stages=2, ctas_per_sm=4)
///   tune(kernel=tiled, tile_rows=32, tile_cols=128, hoist_loads=1)
///
/// `jit(p, target, schedule)`, `mxjit explore`, `mxjit compile --schedule` and the tuner's stored
/// winners all use it. A field that does not apply to the kernel that runs is refused by name.
#include <cstdint>
#include <string>

namespace mxjit {

/// The kernel families of the CUDA generator (codegen/emit_*.cpp).
enum class KernelKind : uint8_t {
  automatic,  ///< the planner picks (the default)
  direct,     ///< registers only: blocks and codes along the unit-stride axis (emit_direct.cpp)
  tiled,      ///< a shared-memory tile of FP32 values, any block shape (emit.cpp)
  columns,    ///< registers only, blocks across rows: dim1, 3-D per-expert, dim0+dim1 (emit_columns.cpp)
  jagged,     ///< jagged groups of rows (MoE token groups), one CTA per group (emit_jagged.cpp)
  rows,       ///< whole-axis blocks (rowwise, colwise): a line's amax before any of its codes (emit_rows.cpp)
};

/// The name of a kernel kind as the text form spells it ("columns", "automatic").
const char* kernel_kind_name(KernelKind k);

/// Named scheduling choices; 0 (and automatic, and hoist_loads -1) means "the default".
struct Schedule {
  KernelKind kernel = KernelKind::automatic;  ///< which kernel family runs the cast
  int tile_rows = 0;          ///< tiled: tile rows (a multiple of the blocks' rows)
  int tile_cols = 0;          ///< tiled: tile columns; jagged: columns per CTA (32, 64, 128, 256)
  int threads = 0;            ///< direct, tiled, jagged, rows: threads per CTA
  int ctas_per_sm = 0;        ///< every kind: __launch_bounds__' minimum CTAs per SM (caps registers)
  int hoist_loads = -1;       ///< tiled: 1 issues every load of a thread before its first store, 0 not
  int rows_per_thread = 0;    ///< columns: rows a thread holds (8, 16); tiled: rows per column-wise store
  int chunks_per_thread = 0;  ///< direct, rows: 8-element chunks a thread loads before using any (1..8)
  int rows_in_flight = 0;     ///< jagged: rows a thread keeps in flight through registers (1..16)
  int cluster = 0;            ///< jagged: CTAs sharing one group (a thread-block cluster, sm_90+)
  int stages = 0;             ///< columns: tiles in flight per CTA (1: one tile per CTA; 2-4: a ring, sm_90+)

  /// Canonical text: the fields that are set, in declaration order ("tune()" for none).
  std::string str() const;
  /// Parses the text form (fields in any order, each at most once). Throws UsageError naming the
  /// field or value at fault; the positional form of generator 23 and older ("tune(0,64,...)") is
  /// refused with the named equivalent's field list.
  static Schedule parse(const std::string& text);
  /// True when no field is set.
  bool is_default() const { return *this == Schedule{}; }
  friend bool operator==(const Schedule&, const Schedule&) = default;
};

}  // namespace mxjit
