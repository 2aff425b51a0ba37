#pragma once
/// \file IR -> plan: how one kernel covers the domain (tile axes and shape, threads, vector
/// width, which values live in shared memory). The plan is a value: printable, part of the key.
///
/// Every kernel is one launch over tiles. A CTA owns a tile of tile_r x tile_c elements on two
/// "tile axes" (ax_r, ax_c) and one index of every other ("batch") axis:
///
///          ax_c (the input's unit-stride axis: 16-byte loads along it)
///        +------------------------------+
///   ax_r | tile_r x tile_c FP32 values  |  -> block amax -> scales -> codes, written
///        | in shared memory, read once  |     coalesced along each output's own
///        +------------------------------+     innermost axis (row- or column-wise)
///
/// Scale blocks must lie on tile axes, so both a dim0 and a dim1 reduction come from one tile.
#include <string>
#include <vector>

#include "codegen/target.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::detail {

/// The version of the generator; part of every cache key. Bump when generated code changes.
inline constexpr const char* kGeneratorVersion = "mxjit-gen-24";

/// The properties of the bound tensors that change the generated code (the "stride class").
/// Exact extents and strides are NOT baked in: they are kernel parameters, so one kernel serves
/// every shape of its class.
struct StrideClass {
  std::vector<int> unit_axis;  ///< per input: the axis with stride 1 (-1: none)
  std::vector<bool> aligned;   ///< per input: base and every other stride 16-byte aligned
  /// True when input k has unit stride along `axis` and is aligned: 16-byte vector loads along it.
  bool vector_along(size_t k, int axis) const {
    return k < unit_axis.size() && unit_axis[k] == axis && k < aligned.size() && aligned[k];
  }
  /// Canonical text, part of the kernel key.
  std::string str() const;
  friend bool operator==(const StrideClass&, const StrideClass&) = default;
};

/// Free parameters a tuner may set (0 = choose the default).
struct Tuning {
  int tile_r = 0, tile_c = 0, threads = 0;
  int min_blocks = 0;  ///< __launch_bounds__ minimum CTAs per SM
  int hoist = -1;      ///< tiled: issue all loads of a thread before storing (1/0; -1 default)
  int col_w = 0;       ///< tiled: rows per thread for column-wise stores (16 or 32)
  int unroll = 0;      ///< direct: chunks per thread
  bool force_tiled = false;  ///< use the tiled kernel even where the direct one applies
  int cluster = 0;     ///< grouped vector kernel: CTAs sharing one group (a thread-block cluster)
  int stages = 0;      ///< columns kernel: tiles in flight per CTA (1: one tile per CTA; 2-4: persistent, a ring of bulk copies, sm_90+)
  /// Canonical text ("tune(64,128,0,4,1,16,0,0,0,0)"), part of the kernel key and what the tuner
  /// stores. parse() also takes the older eight- and nine-field forms (cluster, stages 0).
  std::string str() const;
  /// Parses str(); throws UsageError naming the text.
  static Tuning parse(const std::string& text);
  /// True when every field is at its default.
  bool is_default() const { return str() == Tuning{}.str(); }
};

/// How the kernel covers the domain.
struct Plan {
  /// tiled: the shared-memory tile above; direct: no shared memory — each thread owns 8
  /// consecutive elements along ax_c, a block is `group` neighbouring lanes (amax by shuffles),
  /// used when nothing needs transposing (every block and every output runs along ax_c).
  /// grouped: jagged groups along ax_r, two passes per group (emit_groups.cpp): with col_w 8 the
  /// vector kernel (one CTA per group and tile_c columns, 8 columns per thread, the group's first
  /// tile_r rows cached in shared memory, min_blocks CTAs per SM at most), with col_w 1 the scalar
  /// one (one thread per column, 256 columns per CTA).
  /// columns: registers only for the values — each thread holds col_w (16 or 8) rows x 8 columns
  /// of a 2-byte input, used for casts with blocks along ax_r (dim1, per-expert, dim0+dim1) whose
  /// codes run along their block axis; the tile's scales are staged in shared memory (see
  /// emit_columns.cpp).
  enum class Kind : uint8_t { tiled, direct, grouped, columns };
  Kind kind = Kind::tiled;
  int block_c = 8;  ///< direct: elements per block along ax_c
  int group = 1;    ///< direct: lanes per block (block_c / 8)
  int unroll = 4;   ///< direct: chunks per thread, loaded before any is used
  int rank = 0;
  int ax_r = -1, ax_c = 0;        ///< tile axes (ax_r = -1 for rank-1 domains)
  int tile_r = 1, tile_c = 128;   ///< tile extents in elements
  int row_stride = 0;             ///< shared-memory floats per tile row (padded; see emit)
  int threads = 256;
  int min_blocks = 1;             ///< __launch_bounds__ minimum CTAs per SM (caps registers)
  bool hoist = true;              ///< tiled: all loads of a thread before its first store
  int col_w = 32;                 ///< tiled: rows per thread for column-wise stores
  int roots = 1;                  ///< value tiles held in shared memory
  int smem_bytes = 0;             ///< dynamic shared memory per CTA
  int cluster = 1;                ///< grouped vector kernel: CTAs per cluster, splitting each group's rows
  /// columns: 1 = one tile per CTA, loaded into registers; S >= 2 = persistent CTAs (as many as
  /// fit the GPU) walking the tiles, the CTA's next S - 1 whole tiles in flight as bulk copies
  /// (sm_90+) into a shared-memory ring of S tiles (smem_bytes), so loads overlap the current
  /// tile's work without holding registers.
  int stages = 1;
  /// direct, with blocked scales: the grid also covers the scale matrices' padding, so the kernel
  /// writes its zeros (no memset): rows of the innermost row axis rounded up to pad_r, block
  /// columns to pad_c (the largest atom's; 1 x 1 without blocked scales).
  int pad_r = 1, pad_c = 1;
  std::vector<int> batch_axes;    ///< all other axes, outermost first
  std::vector<int> zero_outputs;  ///< outputs the launcher zeroes first (tensor amax; grouped scale layouts' padding)
  std::string kernel_name;
  /// Canonical text of every field (part of the key and the cache's launch metadata).
  std::string str() const;
  /// Parses str() (launch metadata read back from the cache).
  static Plan parse(const std::string& text);
};

struct ValueSet;
/// True when a scale's blocks run along the columns kernel's ax_c (the dim0 half of a dim0+dim1
/// cast; `along_c` below).
bool columns_along_c(const ValueSet& v, const Plan& plan);
/// The columns kernel's warp shape: lanes along ax_r (each col_w rows), the other 32 / lanes_r
/// along ax_c (each 8 columns). 128 / col_w (a warp covers 128 rows) unless a block runs along
/// ax_c (`along_c`, the dim0 half of a dim0+dim1 cast): then 8, so that its 32 columns are 4
/// lanes of one warp row, and 4 where the one-tile form stages the codes in shared memory
/// (`staged`: columns_stage_codes and stages == 1): a warp covers 32 rows x 64 columns and each
/// of its loads reads 4 whole 128-byte lines, where 8 lanes read 8 half lines. On an H200
/// (dim0+dim1, 16384^2, three interleaved rounds, linear / blocked scales) the 4-lane shape with
/// mx_ld16_l2's 256-byte blocks measured 304.1-306.0 / 287.8-289.1 us against 314.1-314.3 /
/// 294.9-296.3 for 8 lanes; the shape alone, with a staging swizzle that still had a 2-way bank
/// conflict, 305.1-308.7 / 288.8-292.7 against 314.4-317.6 / 295.3-296.6. Unstaged codes
/// keep 8 lanes (their column-wise stores leave from the registers, 8 rows of a column per lane
/// and 4 lanes a column: a 32-byte piece per column and warp store at 4), and so does the
/// pipelined form (its ring's row padding, columns_slot_bytes, spreads 8 row groups over the
/// banks).
inline int columns_lanes_r(int col_w, bool along_c, bool staged) { return !along_c ? 128 / col_w : staged ? 4 : 8; }
/// columns_lanes_r of a columns plan for `p`.
int columns_plan_lanes_r(const Pipeline& p, const ValueSet& v, const Plan& plan);

/// The columns kernel's pipelined ring: a slot holds one tile, tile_r rows of tile_c 2-byte
/// elements as the bulk copies leave them (a copy per row), each row shifted by 16 bytes per
/// col_w rows, so that a quarter-warp's 8 lanes (8 row groups, one column group) read 8
/// different 16-byte bank groups:
///
///   row i at  i * row_bytes + 16 * (i / col_w)       (col_w = 8, 256-byte rows:)
///   rows 0-7    bytes    0 .. 2047                   bank group 0 at each row's column 0
///   rows 8-15   bytes 2064 .. 4111  (+16)            bank group 1
///   ...
inline int columns_row_bytes(const Plan& p) { return p.tile_c * 2; }
inline int columns_slot_bytes(const Plan& p) { return p.tile_r * columns_row_bytes(p) + 16 * (p.tile_r / p.col_w); }

/// The columns kernel stages a dim0+dim1 cast's codes in two 16 KiB shared-memory tiles (see
/// emit_columns.cpp): a row-wise scale too, 8 rows per thread, 256 threads (so 128 x 128 tiles,
/// at either warp shape of columns_lanes_r) and 8-bit codes (8-byte stores each way). plan sizes
/// shared memory and picks the warp shape by it, the emitter writes it.
bool columns_stage_codes(const Pipeline& p, const ValueSet& v, const Plan& plan);
/// The one-tile form of those staged codes (4 lanes along the rows) keeps each 128-byte line in
/// order, with kColumnsLinePad bytes of padding between lines per tile (emit_columns.cpp's
/// line_pad), so that a bulk copy can take a line whole.
bool columns_lines_padded(const Pipeline& p, const ValueSet& v, const Plan& plan);
inline constexpr int kColumnsLinePad = 384;

/// True when the direct kernel reads dequantize node `n` a chunk at a time: its blocks run along
/// ax_c in multiples of 8 (a chunk of 8 elements has one scale), and its codes are unit-stride and
/// aligned along ax_c (one 8-byte load of 8 FP8/FP6/INT8 codes, 4 bytes of 8 FP4 codes).
bool chunk_dequant(const Pipeline& p, const Plan& plan, const StrideClass& sc, const NodePtr& n);

/// Chooses the plan for `p` on `target` and stride class `sc`. Throws UsageError when the GPU
/// generator cannot run the pipeline (naming the reason, e.g. jagged groups).
Plan make_plan(const Pipeline& p, const Target& target, const StrideClass& sc, const Tuning& tuning = {});

}  // namespace mxjit::detail
