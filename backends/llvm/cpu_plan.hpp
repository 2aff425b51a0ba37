#pragma once
/// \file IR -> CPU plan: how the host kernel covers the domain. Same model as the GPU plan
/// (codegen/plan.hpp) and the same ValueSet (codegen/values.hpp): one call of the compiled tile
/// function owns a tile of nr x nc elements on two tile axes (ax_r, ax_c) and one index of every
/// other ("batch") axis; the thread pool hands tiles to cores.
///
///            ax_c (the input's unit-stride axis: vector loads along it)
///          +-------------------------------+
///     ax_r | nr x nc FP32 values (scratch) |  -> block amax -> scales -> codes (u8 scratch)
///          |  evaluated once per element   |     -> stored along each output's innermost axis
///          +-------------------------------+
///
/// Jagged groups: a tile along ax_r is one whole group (nr = its length), so the group's amax
/// comes from one tile; rows past the last group end form "outside" tiles (codes 0, no scales).
///
/// Whole-axis blocks (kWholeAxis: rowwise, colwise, tensorwise) span tiles, so they take two
/// passes over the tiles: the amax pass (mode 0) reduces each tile's part of every block and
/// atomically maxes it into the block's word of a u32 buffer (one word per scale); the cast
/// (mode 1) reads the block amax back from that buffer. Along a whole tile axis a tile is one
/// block (br = tile_r or bc = tile_c); along a whole batch axis the scale index is 0.
///
///     amax pass:  tile (b, r, c) --max--> whole[idx(b, r, c)]   (atomic u32 max of |x| bits)
///     cast:       whole[idx(b, r, c)] -> scale -> codes; tiles at index 0 of the whole axes store the scale
/// The plan also fixes the layout of the parameter block (int64 words) the driver fills.
#include <string>
#include <vector>

#include "codegen/values.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::cpu::detail {

/// A scale as computed for the elements: the scale node with or without flushed values (the
/// reference keys scales by (scale, flush)).
struct ScaleInstance {
  int scale = 0;       ///< index into ValueSet::scales
  bool flush = false;  ///< amax over flushed values
  bool jagged = false;  ///< blocks are the jagged groups along ax_r
  int64_t br = 1, bc = 1;  ///< block extent along ax_r / ax_c (br unused when jagged)
  int tamax_slot = -1;  ///< NVFP4: the slot of its tensor amax (pre-pass)
  uint32_t whole_axes = 0;  ///< bit a: the blocks span the whole axis a (kWholeAxis)
  int whole = -1;           ///< whole-axis blocks: the index of its amax buffer (CpuPlan::p_whole)
  /// True when the blocks span the whole axis `a` (a tile axis or a batch axis).
  bool whole_along(int a) const { return a >= 0 && (whole_axes >> a & 1u); }
};

/// Most values one tile holds (tile_r x tile_c): 2^22, 16 MiB of FP32 per value tile and worker.
inline constexpr int64_t kMaxTileValues = int64_t(1) << 22;

/// How the CPU kernel covers the domain and where its parameters live.
struct CpuPlan {
  int rank = 0;
  int ax_r = -1, ax_c = -1;       ///< tile axes; -1: a virtual axis of extent 1
  int tile_r = 1, tile_c = 1;     ///< tile extents (jagged: tile_r splits the outside rows only)
  std::vector<int> batch_axes;    ///< every other axis, outermost first
  std::vector<int> unit_axis;     ///< per input: the stride-1 axis baked into the code (-1: none)
  int offsets_input = -1;         ///< jagged: the offsets input (group ends along ax_r)
  ::mxjit::detail::ValueSet values;
  std::vector<ScaleInstance> instances;
  std::vector<int> quantize_instance;  ///< per quantize: its instance
  std::vector<int> output_instance;    ///< per output: the instance of a scales output (-1 otherwise)
  std::vector<int> amax_slot;          ///< per output: the slot of an amax output (-1 otherwise)
  int slots = 0;                       ///< u32 atomic-max slots (amax outputs, NVFP4 tensor amax)
  bool prepass = false;                ///< an amax pass runs first (NVFP4's tensor amax, whole-axis blocks)
  int wholes = 0;                      ///< amax buffers of whole-axis instances
  std::string function_name;

  // Parameter block: int64 words. Pointers are stored as integers.
  int ni = 0, no = 0;  ///< inputs and outputs of the pipeline
  /// Word of input k's / output o's data pointer.
  int p_in(int k) const { return k; }
  int p_out(int o) const { return ni + o; }
  /// Word of the domain extent along axis a.
  int p_shape(int a) const { return ni + no + a; }
  /// Word of input k's stride (elements) along axis a (vectors: a = 0 only).
  int p_in_stride(int k, int a) const { return ni + no + rank + k * rank + a; }
  /// Word of output o's view stride / logical extent along axis a (output_geometry).
  int p_out_stride(int o, int a) const { return ni + no + rank + ni * rank + o * rank + a; }
  int p_out_shape(int o, int a) const { return ni + no + rank + ni * rank + no * rank + o * rank + a; }
  /// Word of the domain's row-major stride along axis a (the Philox element index).
  int p_dom_stride(int a) const { return ni + no + rank + ni * rank + 2 * no * rank + a; }
  int p_slots() const { return p_dom_stride(rank); }          ///< pointer to u32[slots]
  int p_tamax(int slot) const { return p_slots() + 1 + slot; }  ///< f32 bits of a pre-pass amax
  /// Word of whole-axis buffer k's pointer (u32[scales], zeroed by the driver) and of its
  /// row-major stride along axis a of the scale tensor.
  int p_whole(int k) const { return p_tamax(slots) + k * (rank + 1); }
  int p_whole_stride(int k, int a) const { return p_whole(k) + 1 + a; }
  /// Size of the parameter block in words.
  int param_words() const { return p_whole(wholes); }

  /// Canonical text (part of the cache metadata and the IR banner).
  std::string str() const;
};

/// Tile descriptor words passed with each call of the tile function.
enum TileWord : int {
  kMode = 0,     ///< 0: amax pass (tensor amax, whole-axis block amaxes), 1: the cast
  kR0,           ///< first row (domain index along ax_r)
  kNr,           ///< rows in this tile
  kC0,           ///< first column
  kNc,           ///< columns in this tile
  kGroup,        ///< jagged: the group index (scale row), -1 for outside tiles
  kCap,          ///< row capacity of the scratch tiles
  kBatch,        ///< kBatch + a: index along batch axis a (any axis slot; tile axes unused)
};

/// Chooses the CPU plan for `p` with stride class `unit_axis` (per input). Throws UsageError
/// naming what this backend does not lower.
CpuPlan make_cpu_plan(const Pipeline& p, const std::vector<int>& unit_axis);

/// Scratch of one worker: a fixed part, then row-sized buffers for a row capacity `cap`:
///   colmax u32[tile_c] | mrow f32[tile_c] | frow i32[tile_c] | per instance: mult f32[nbc], flag i32[nbc]
///   | per root: f32[cap * tile_c] | per quantize: codes u8[cap * tile_c]
/// (nbc = tile_c / bc: the blocks of one block row).
struct ScratchLayout {
  int64_t colmax = 0, mrow = 0, frow = 0;   ///< fixed offsets (bytes)
  std::vector<int64_t> blk_mult, blk_flag;  ///< per instance, fixed offsets
  int64_t fixed = 0;                        ///< bytes of the fixed part (64-byte multiple)
  /// Offset of root k's tile / quantize q's codes for row capacity cap.
  int64_t root(int k, int64_t cap, int64_t tile_c) const { return fixed + int64_t(k) * cap * tile_c * 4; }
  int64_t codes(int roots, int q, int64_t cap, int64_t tile_c) const {
    return fixed + int64_t(roots) * cap * tile_c * 4 + int64_t(q) * cap * tile_c;
  }
};
/// The scratch layout of `plan`.
ScratchLayout scratch_layout(const CpuPlan& plan);
/// Bytes of scratch one worker needs for tiles of up to `cap` rows.
int64_t scratch_bytes(const CpuPlan& plan, int64_t cap);

}  // namespace mxjit::cpu::detail
