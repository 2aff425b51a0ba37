#pragma once
/// \file IR + schedule -> plan: every decision the kernel emitters act on, the launch grid and the
/// kernel's parameter layout. The plan is a value: printable (the generated banner carries it),
/// part of the kernel's name and key; the runtime consumes it and never re-derives it.
///
/// Every kernel is one launch over tiles. A CTA owns a tile of rows x cols elements on two
/// "tile axes" (ax_r, ax_c) and one index of every other ("batch") axis:
///
///          ax_c (the input's unit-stride axis: 16-byte loads along it)
///        +------------------------------+
///   ax_r | rows x cols FP32 values      |  -> block amax -> scales -> codes, written
///        | in shared memory, read once  |     coalesced along each output's own
///        +------------------------------+     innermost axis (row- or column-wise)
///
/// Scale blocks must lie on tile axes, so both a dim0 and a dim1 reduction come from one tile.
/// One plan type per kernel kind (DirectPlan, TiledPlan, ColumnsPlan, JaggedPlan) holds that
/// kind's own decisions; Plan holds what every kind has (axes, threads, launch bounds, shared
/// memory, parameters, pre-pass).
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codegen/schedule.hpp"
#include "codegen/target.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::detail {

/// The version of the generator; part of every cache key. Bump when generated code changes.
inline constexpr const char* kGeneratorVersion = "mxjit-gen-52";

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

/// How the direct kernel's blocked scales of one output leave (emit_direct.cpp).
enum class BlockedStore : uint8_t {
  none,        ///< not a blocked (128x4 / 8x4) scales output of this kernel
  bytes,       ///< one byte per block from its first lane
  words,       ///< 4 block columns of one row gathered into one 4-byte store per lane
  atom_lines,  ///< 4 rows 32 apart x 4 blocks: one 16-byte line of a 128x4 atom per 4 blocks
};

/// The direct kernel (emit_direct.cpp): no shared memory; a thread owns chunks of 8 consecutive
/// elements along ax_c, a block is lanes_per_block neighbouring lanes (amax by shuffles).
struct DirectPlan {
  int block_cols = 8;         ///< elements per scale block along ax_c
  int lanes_per_block = 1;    ///< lanes holding one block (block_cols / 8)
  int chunks_per_thread = 4;  ///< chunks a thread loads before using any (one row each)
  /// With blocked scales the grid also covers the scale matrices' padding, so the kernel writes its
  /// zeros (no memset): rows of the innermost row axis rounded up to pad_rows, block columns to
  /// pad_block_cols (the largest atom's; 1 x 1 without blocked scales).
  int pad_rows = 1, pad_block_cols = 1;
  int row_step = 1;            ///< rows between a thread's chunks (32: rows r, r+32, r+64, r+96 of a 128x4 atom)
  bool wide_rows = false;      ///< 64-bit row indices (element loads, which ptxas then keeps in flight)
  std::vector<bool> scatter_scales;  ///< per scale: computed once per block row, on one lane (reduce-scatter)
  std::vector<bool> e2m1_words;      ///< per quantize: E2M1 codes from the bf16 words by bf16x2 arithmetic (sm_90)
  std::vector<bool> eight_at_once;   ///< per quantize: 8 E2M1 codes at once where the multiplier is finite (NVFP4)
  std::vector<BlockedStore> blocked;  ///< per output: how its blocked scales leave
  /// Tensorwise: every scale's one block is the whole tensor. Its amax is the pre-pass's word
  /// (Plan::prepass, P.aux), so each thread computes the scale once, before its chunks, and one
  /// thread stores it; the kernel is then an elementwise cast (block_cols 8, one lane a block).
  bool tensorwise = false;
  /// 2-D blocks (block_rows x block_cols over ax_r, ax_c; 1 for 1-D blocks): one CTA per block,
  /// lanes_per_block lanes across its columns, threads / lanes_per_block rows a round, each
  /// thread chunks_per_thread rows (block_rows / rows a round apart). The block amax crosses the
  /// warps once through shared memory; then every thread quantizes its chunks as tensorwise does.
  ///
  ///   block 128x128, 256 threads: thread t -> columns 8 * (t % 16) .. +7,
  ///                               rows t / 16 + 16 * u for u = 0..7
  int block_rows = 1;
};

/// The tiled kernel (emit.cpp): the tile's FP32 values in shared memory, any block shape.
struct TiledPlan {
  int tile_rows = 1, tile_cols = 128;  ///< the tile in elements (ax_r x ax_c)
  int row_stride = 0;                  ///< shared-memory floats per tile row (padded: conflict-free columns)
  bool hoist_loads = true;             ///< every load of a thread issued before its first store
  int rows_per_store = 32;             ///< rows per thread of a column-wise code store
  int value_tiles = 1;                 ///< value tiles held in shared memory
};

/// The columns kernel (emit_columns.cpp): registers only for the values; each thread holds
/// rows_per_thread rows x 8 columns of a 2-byte input; blocks along ax_r (dim1, per-expert,
/// dim0+dim1), codes along their block axis, the tile's scales staged in shared memory.
struct ColumnsPlan {
  int rows_per_thread = 16;   ///< 16 or 8 (half the registers)
  int lanes_along_rows = 8;   ///< lanes of a warp along ax_r (columns_lanes_r); the rest along ax_c
  int tile_rows = 128, tile_cols = 128;
  /// 1 = one tile per CTA, loaded into registers; S >= 2 = persistent CTAs (as many as fit the
  /// GPU) walking the tiles, the CTA's next S - 1 whole tiles in flight as bulk copies (sm_90+)
  /// into a shared-memory ring of S tiles (Plan::smem_bytes).
  int stages = 1;
  bool rowwise_scale = false;  ///< a scale's blocks run along ax_c too (dim0+dim1); column tiles then run fastest
  bool codes_staged = false;   ///< dim0+dim1's 8-bit codes staged in two 16 KiB tiles, copied out as whole lines
  bool lines_padded = false;   ///< staged lines in order, kColumnsLinePad bytes of padding per tile (else swizzled)
  bool bulk_copy_out = false;  ///< staged lines leave as bulk copies (sm_90+, blocked scales)
  std::vector<bool> scatter_scales;  ///< per scale: one scale per lane on the fast path (reduce-scatter)
};

/// A kernel beside a jagged plan's own in one module (JaggedPlan::plain, JaggedPlan::small), one
/// CTA a group: its own CTAs per SM and threads, and so its own row cache, registers and shared
/// memory.
struct SideKernel {
  int ctas_per_sm = 4;           ///< its __launch_bounds__ minimum CTAs per SM (Plan::ctas_per_sm)
  int smem_bytes = 0;            ///< its dynamic shared memory (Launch::smem_bytes when it runs)
  int cached_rows = 0;           ///< as JaggedPlan's, for its own shared memory
  int cached_rows_per_step = 2;  ///< as JaggedPlan's
  int rows_in_flight = 4;        ///< as JaggedPlan's
  int threads = 256;             ///< its CTA's threads (Launch::threads when it runs)
  int run_rows = 0;              ///< as JaggedPlan's
};

/// The jagged kernel (emit_jagged.cpp): jagged groups of rows along ax_r (MoE token groups from a
/// device offsets array), two passes per group.
struct JaggedPlan {
  /// true: one CTA per group and cols_per_cta columns, 8 columns per thread, the group's first
  /// cached_rows rows cached in shared memory; false: one thread per column, 256 columns per CTA.
  bool vector = true;
  /// The scalar kernel with a warp per column, its lanes on consecutive rows (the input is
  /// unit-stride along the group axis: per-group rowwise scales of a row-major input).
  bool lanes = false;
  int cols_per_cta = 64;
  int cached_rows = 0;          ///< rows of the group cached in shared memory for pass 2
  int cached_rows_per_step = 4;  ///< cached rows read back per loop step (2 within 64 registers)
  int rows_in_flight = 8;       ///< rows a thread keeps in flight through registers
  int cluster = 1;              ///< CTAs splitting each group's rows (a thread-block cluster, sm_90+)
  /// The cluster is chosen at launch, at most `cluster` CTAs: the fewest whose parts of the rows
  /// fit the row cache (the rows kernel's across form, whose whole axis is known at launch only).
  bool cluster_at_launch = false;
  /// Token groups: two kernels in one module, one CTA a group (Plan::kernel_name, planned by
  /// `plain`) and `cluster` CTAs a group (its "_cluster" entry, the cluster compiled in, planned by
  /// this plan); the launch takes the cluster where the groups' mean size passes the plain
  /// kernel's row cache, the plain kernel otherwise. A cluster splits a large group's re-read rows
  /// across SMs; small groups take more, smaller CTAs an SM, without the exchange
  /// (docs/perf-log.md#jagged-two-kernels). Column-major codes: both one CTA a group, the plain
  /// kernel 3 an SM and this plan's (its "_large" entry) 2, with a larger row cache
  /// (docs/perf-log.md#jagged-column-major-two-kernels).
  std::optional<SideKernel> plain;
  /// Column-major codes: a third kernel for small groups (its "_small" entry), 128 threads and 6
  /// CTAs an SM, taken where the groups' mean size fits its row cache (580 rows): pass 2's 32
  /// row lanes then cover a 256-row group where the 256-thread CTA left half of its lanes idle
  /// (docs/perf-log.md#jagged-column-major-small-groups). Set only beside `plain`.
  std::optional<SideKernel> small;
  /// Column-major codes: rows a thread encodes and transposes at a time, one store of a column's
  /// run (4, 8 or 16 bytes); 0 for row-major codes.
  int run_rows = 0;
};

/// The rows kernel (whole-axis blocks, emit_rows.cpp): each line (the elements sharing one scale:
/// every index but the whole axis ax_c) belongs to `wpl` warps, which hold its first
/// wpl * 32 * chunks_per_thread * 8 elements in registers while its amax is reduced, so that a
/// line up to that length is read once; longer lines are read again for their codes. wpl is the
/// smallest power of two of warps that holds the line (at most threads / 32), chosen per launch
/// from the extent (Plan::launch and the kernel compute it alike):
///
///   line of 5120 bf16, 256 threads, 4 chunks:  wpl = 8 (1 line per CTA), 2.5 chunks per thread
///   line of 300:                                wpl = 1 (8 lines per CTA), 2 chunks per lane
///
/// Where the lead input's unit-stride axis is another axis u (colwise of a row-major tensor), the
/// lanes run across lines instead (`across_axis` = u): a CTA takes 32 lines neighbouring along u,
/// lane i line i, and its warps split the whole axis; each lane's amax meets the other warps'
/// in shared memory, and the line is read twice (amax, then codes), every load 32 neighbours.
struct RowsPlan {
  int chunks_per_thread = 4;             ///< 8-element chunks a thread holds (1..8)
  int across_axis = -1;                  ///< lanes across lines neighbouring along this axis (-1: along the line)
  std::vector<bool> strided_codes;       ///< per output: codes stored element by element (ax_c not innermost)
  /// The across form on 16-byte columns: the jagged vector kernel's two passes with the whole axis
  /// as its one group (its rows), the lines along across_axis as its columns and the other axes'
  /// indices as its grid rows; the row cache holds the lines' first positions. Set where that
  /// kernel applies (jagged_vector_applies with those axes), else lanes run one line each.
  std::optional<JaggedPlan> columns;
};

/// One field of the kernel's parameter block (every word 8 bytes), in MxParams order.
enum class Param : uint8_t {
  in,          ///< input base pointers, one per input
  out,         ///< output base pointers, one per output
  shape,       ///< the domain's extents, one per axis
  in_stride,   ///< per input, per axis (elements)
  out_stride,  ///< per output, per axis of its view
  out_shape,   ///< per output, per axis of its logical shape
  tiles_r,     ///< Launch::tiles_r
  tiles_c,     ///< Launch::tiles_c
  aux,         ///< the workspace's device address (the pre-pass's tensor amax), else 0
  in_extent,   ///< per input: its extent along axis 0 (an offsets input: the group count)
};

/// The kernel's parameter block: the generated MxParams struct and the launcher's words both
/// follow it.
struct ParamLayout {
  struct Field {
    Param what;
    int words;
  };
  std::vector<Field> fields;
  /// Total words.
  int words() const;
};

/// A kernel run before the cast: the tensor amax of a scale's value, into the workspace. NVFP4's
/// per-tensor scale reads it, and a tensorwise scale (blocks whole on every axis) takes it as its
/// one block's amax (the pre-pass then skips NaN where the scale's AmaxNan says so).
struct PrePass {
  Pipeline pipeline;          ///< the tensor-amax pipeline
  std::vector<int> inputs;    ///< its inputs' positions among the cast's inputs
  int workspace_bytes = 4;    ///< the FP32 amax it leaves for the cast (Param::aux)
};

/// The launch of one plan on one domain.
struct Launch {
  unsigned grid[3] = {1, 1, 1};
  int64_t tiles_r = 1, tiles_c = 1;  ///< the Param::tiles_r / tiles_c words
  /// Persistent CTAs (the columns kernel's ring): grid[0] is the tile count, which the launcher
  /// caps at the CTAs the GPU holds at once.
  bool persistent = false;
  /// CTAs per thread-block cluster chosen at launch (cuLaunchKernelEx's cluster dimension along
  /// x, grid[0] a multiple of it; 1 is a cluster launch too, so the kernel's cluster barriers and
  /// %cluster_nctarank are defined); 0: a plain launch (no cluster, or one fixed by the kernel's
  /// __cluster_dims__).
  unsigned cluster = 0;
  /// Which kernel of the module runs: an index into Plan::entry_names() (0: Plan::kernel_name).
  int entry = 0;
  /// Its dynamic shared memory where it is not Plan::smem_bytes; -1 where it is.
  int smem_bytes = -1;
  /// Its CTA's threads where they are not Plan::threads (JaggedPlan::small); -1 where they are.
  int threads = -1;
};

/// How one kernel covers the domain.
struct Plan {
  KernelKind kind = KernelKind::tiled;  ///< which alternative `kernel` holds
  int rank = 0;
  int ax_r = -1, ax_c = 0;         ///< tile axes (ax_r = -1 for rank-1 domains)
  std::vector<int> batch_axes;     ///< all other axes, outermost first
  int threads = 256;
  int ctas_per_sm = 1;             ///< __launch_bounds__ minimum CTAs per SM (caps registers)
  int smem_bytes = 0;              ///< dynamic shared memory per CTA
  std::vector<int> zero_outputs;   ///< outputs the launcher zeroes first (tensor amax; grouped layouts' padding)
  std::optional<PrePass> prepass;  ///< NVFP4: the tensor amax kernel
  ParamLayout params;
  Schedule schedule;               ///< the schedule asked for (its unset fields took defaults)
  std::string kernel_name;         ///< set by generate(): role and key hash
  std::variant<DirectPlan, TiledPlan, ColumnsPlan, JaggedPlan, RowsPlan> kernel;

  const DirectPlan& direct() const { return std::get<DirectPlan>(kernel); }
  const TiledPlan& tiled() const { return std::get<TiledPlan>(kernel); }
  const ColumnsPlan& columns() const { return std::get<ColumnsPlan>(kernel); }
  const JaggedPlan& jagged() const { return std::get<JaggedPlan>(kernel); }
  const RowsPlan& rows() const { return std::get<RowsPlan>(kernel); }
  /// The tile of the tiled and columns kinds (rows x cols); throws for the others.
  std::pair<int, int> tile() const;
  /// The grid and tile counts for a domain of `shape` (`groups`: the jagged kernel's group count, or
  /// the largest offsets input's extent where grouped layouts bound the kernel's 32-bit indexing).
  /// Throws UsageError where the domain does not fit one launch or the kernel's 32-bit indexing.
  Launch launch(const std::vector<int64_t>& shape, int64_t groups) const;
  /// The extern "C" kernels of the module, which Launch::entry indexes: kernel_name, and for a
  /// jagged plan with a plain kernel (JaggedPlan::plain) the plan's own kernel, kernel_name +
  /// "_cluster" (a cluster) or "_large", then with JaggedPlan::small kernel_name + "_small".
  std::vector<std::string> entry_names() const;
  /// Canonical text of every field, one line per part (the banner; the cache's metadata).
  std::string str() const;
};

/// How strictly make_plan takes the schedule.
enum class Fit : uint8_t {
  exact,   ///< a field that does not apply to the kernel that runs is a UsageError (jit, explore, CLI)
  lenient, ///< such fields are ignored: the schedule was checked on another stride class of the same Kernel
};

/// Chooses the plan for `p` on `target` and stride class `sc` under `schedule` (codegen/planner.cpp).
/// Throws UsageError when the GPU generator cannot run the pipeline (naming the reason, e.g. jagged
/// groups beside an amax output) or the schedule does not apply.
Plan make_plan(const Pipeline& p, const Target& target, const StrideClass& sc, const Schedule& schedule = {},
               Fit fit = Fit::exact);

/// The longest whole axis (elements) that takes short_whole_schedule: one CTA of its 128 threads
/// caches the whole axis of 32 bf16 columns (415 rows fit its shared memory).
inline constexpr int64_t kShortWholeAxis = 256;

/// The default schedule of `p` on stride class `sc` where its whole axis is at most
/// kShortWholeAxis long (runtime/tuner.cpp's shape class "w"): where the rows kernel's across
/// form on columns runs it, CTAs of 128 threads, 8 per SM, no cluster (a whole axis of 128 took
/// 100 us at the default 256 threads x 4 CTAs per SM, 51 us so; docs/perf-log.md, short whole
/// axes); the default schedule elsewhere.
Schedule short_whole_schedule(const Pipeline& p, const Target& target, const StrideClass& sc);

/// The rows kernel's warps per line for a line of `extent` elements (RowsPlan).
int64_t rows_warps_per_line(int64_t extent, int threads, int chunks_per_thread);

struct ValueSet;

/// The columns kernel's warp shape: lanes along ax_r (each rows_per_thread rows), the other
/// 32 / lanes along ax_c (each 8 columns). 128 / rows_per_thread (a warp covers 128 rows) unless a
/// block runs along ax_c (`rowwise`, the dim0 half of a dim0+dim1 cast): then 8, so that its 32
/// columns are 4 lanes of one warp row, and 4 where the one-tile form stages the codes in shared
/// memory (`staged`): a warp covers 32 rows x 64 columns and each of its loads reads 4 whole
/// 128-byte lines (docs/perf-log.md, "columns warp shape"). Unstaged codes keep 8 lanes (their
/// column-wise stores leave from the registers, 8 rows of a column per lane and 4 lanes a column),
/// and so does the pipelined form (its ring's row padding spreads 8 row groups over the banks).
inline int columns_lanes_r(int rows_per_thread, bool rowwise, bool staged) {
  return !rowwise ? 128 / rows_per_thread : staged ? 4 : 8;
}

/// The columns kernel's pipelined ring: a slot holds one tile, tile_rows rows of tile_cols 2-byte
/// elements as the bulk copies leave them (a copy per row), each row shifted by 16 bytes per
/// rows_per_thread rows, so that a quarter-warp's 8 lanes (8 row groups, one column group) read 8
/// different 16-byte bank groups:
///
///   row i at  i * row_bytes + 16 * (i / rows_per_thread)   (8 rows a thread, 256-byte rows:)
///   rows 0-7    bytes    0 .. 2047                   bank group 0 at each row's column 0
///   rows 8-15   bytes 2064 .. 4111  (+16)            bank group 1
///   ...
inline int columns_row_bytes(const ColumnsPlan& c) { return c.tile_cols * 2; }
inline int columns_slot_bytes(const ColumnsPlan& c) {
  return c.tile_rows * columns_row_bytes(c) + 16 * (c.tile_rows / c.rows_per_thread);
}
/// Padding bytes per staged code tile of the one-tile form (emit_columns.cpp's line_pad).
inline constexpr int kColumnsLinePad = 384;

/// True when the direct kernel reads dequantize node `n` a chunk at a time: its blocks run along
/// ax_c in multiples of 8 (a chunk of 8 elements has one scale), and its codes are unit-stride and
/// aligned along ax_c (one 8-byte load of 8 FP8/FP6/INT8 codes, 4 bytes of 8 FP4 codes).
bool chunk_dequant(const Pipeline& p, int ax_c, const StrideClass& sc, const NodePtr& n);

}  // namespace mxjit::detail
