// grouped_blocked_128x4 scales in generated code, without a GPU: every variant the GPU tests run
// (dim0 and dim1 casts, both group axes, bf16 and f32, row- and column-major inputs, so both the
// direct and the tiled kernel, E8M0 and NVFP4 scales) compiles with NVRTC for sm_90a and sm_100a;
// mx_grouped.cuh and in_extent appear only in kernels that write a grouped layout.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "codegen/emit.hpp"
#include "runtime/compile.hpp"
#include "support/compile_variants.hpp"

using namespace mxjit;
using namespace mxjit::detail;

namespace {

/// A cast along `block_axis` (1: dim0, 0: dim1) with scales grouped along domain axis `group_axis`.
Pipeline grouped(DType dt, int block_axis, int group_axis, bool nvfp4 = false) {
  auto x = input("x", dt, rank(2));
  const Layout q = block_axis == 1 ? layout::row_major() : layout::col_major();
  const Layout g = layout::grouped_blocked_128x4(offsets("offs"), group_axis);
  if (nvfp4) {
    auto s = nvfp4_scale(amax(blocks(x, block_axis, 16)), Nvfp4Convention::te);
    return pipeline({output("q", cast(e2m1, x / s), q), output("s", s, g)});
  }
  auto s = e8m0_scale(amax(blocks(x, block_axis, 32)), e4m3, ScaleRule::rceil);
  return pipeline({output("q", cast(e4m3, x / s), q), output("s", s, g)});
}

/// The stride class of a row-major (unit axis 1) or column-major (unit axis 0) x, offsets contiguous.
StrideClass input_order(bool col_major) { return StrideClass{{col_major ? 0 : 1, 0}, {true, false}}; }

std::vector<test::CompileVariant> variants() {
  std::vector<test::CompileVariant> v;
  for (int block_axis : {1, 0})
    for (int group_axis : {0, 1})
      for (DType dt : {DType::bf16, DType::f32})
        for (bool col_major : {false, true})
          v.push_back({fmt::format("dim{} groups {} {} {}", 1 - block_axis, group_axis, dtype_name(dt),
                                   col_major ? "col-major" : "row-major"),
                       grouped(dt, block_axis, group_axis), input_order(col_major)});
  for (int block_axis : {1, 0})
    for (int group_axis : {0, 1})
      v.push_back({fmt::format("nvfp4 dim{} groups {}", 1 - block_axis, group_axis),
                   grouped(DType::bf16, block_axis, group_axis, true), input_order(false)});
  return v;
}

/// The table size in the kernel's `__shared__ MxGroupCursor mx_gt1[N];` declaration, or 0.
int grouped_cols_table_n(const GeneratedKernel& k) {
  const std::string d = "__shared__ MxGroupCursor mx_gt1[";
  const size_t at = k.source.find(d);
  return at == std::string::npos ? 0 : std::stoi(k.source.substr(at + d.size()));
}

}  // namespace

TEST_CASE("grouped_blocked_128x4: every variant compiles for sm_90a and sm_100a" * doctest::test_suite("slow")) {
  const std::vector<test::CompileVariant> vs = variants();
  const int compiled = test::compile_variants(vs);
  MESSAGE("compiled " << compiled << " grouped-layout kernels");
}

TEST_CASE(
    "grouped_blocked_128x4: both emitters write it; its padding is the direct kernel's for token groups, the columns "
    "kernel's for K groups, else the launcher's") {
  const Target t = Target::parse("sm_90a");
  for (int block_axis : {1, 0})
    for (int group_axis : {0, 1})
      for (bool col_major : {false, true}) {
        const Pipeline p = grouped(DType::bf16, block_axis, group_axis);
        const GeneratedKernel k = generate(p, t, input_order(col_major));
        CAPTURE(block_axis);
        CAPTURE(group_axis);
        CAPTURE(col_major);
        // The block axis is the unit-stride axis: the direct kernel; otherwise the tiled one.
        CHECK((k.plan.kind == KernelKind::direct) == (block_axis == (col_major ? 0 : 1)));
        // dim1 of a row-major bf16 input: the columns kernel, as without groups (docs/perf-log.md,
        // sixteenth session).
        if (block_axis == 0 && !col_major) CHECK(k.plan.kind == KernelKind::columns);
        // Token groups (one scale per row) in the direct kernel: warp 0 finds the CTA's rows'
        // groups, all its lanes together; elsewhere a walk over the groups per scale.
        const bool warp_place = k.plan.kind == KernelKind::direct && group_axis == 1 - block_axis;
        // K groups in the columns kernel: warp 0's table of the tile's groups (below).
        const bool table = k.plan.kind == KernelKind::columns && group_axis == block_axis;
        // There the kernel writes the padding (the direct kernel last, every warp a 128-row band;
        // the columns kernel beside its scales and past the groups); elsewhere the launcher zeroes
        // the buffer first.
        CHECK(k.plan.zero_outputs == (warp_place || table ? std::vector<int>{} : std::vector<int>{1}));
        const size_t pad_at = k.source.find(
            "mx_grouped_rows_pad(static_cast<mx_u8*>(P.out[1]), static_cast<const int*>(P.in[1]), "
            "P.in_stride[1][0], P.in_extent[1], P.shape[");
        CHECK((pad_at != std::string::npos) == warp_place);
        if (warp_place) CHECK(pad_at > k.source.rfind("mx_grouped_rows_place("));
        if (warp_place)
          CHECK(k.source.find("mx_grouped_rows_place(") != std::string::npos);
        else
          CHECK(k.source.find(fmt::format("mx_grouped_blocked_offset<{}>", group_axis == 1 - block_axis ? "true" : "false")) !=
                std::string::npos);
        CHECK(k.source.find("mx_i64 in_extent[2];") != std::string::npos);
        CHECK(k.source.find("#include \"mx_grouped.cuh\"") != std::string::npos);
        CHECK(k.source.find("P.in_extent[1]") != std::string::npos);
        // The scales themselves: stored through the grouped offset only.
        const std::string body = k.source.substr(k.source.find("extern \"C\" __global__"));
        if (warp_place) {
          // One search, by warp 0 only, into shared memory; no other warp shuffles for it. The
          // bytes wait in registers and are stored after phase 2, behind the one barrier, at 6
          // CTAs of 256 threads (40 registers; docs/perf-log.md#grouped-rows-search).
          const size_t search = body.find("if (threadIdx.x < 32u) {  // warp 0 searches");
          const size_t place = body.find("mx_grouped_rows_place(");
          CHECK(search != std::string::npos);
          CHECK(place > search);
          CHECK(body.find("mx_grouped_rows_place(", place + 1) == std::string::npos);
          CHECK(body.find("if (threadIdx.x < 4u) mx_gp1[threadIdx.x] = int(gpw1);") > place);
          CHECK(body.find("__shfl_sync(0xffffffffu, gpw1") == std::string::npos);
          const size_t barrier = body.find("__syncthreads();  // warp 0's padded rows");
          CHECK(barrier != std::string::npos);
          CHECK(body.find("__syncthreads()", barrier + 1) == std::string::npos);
          CHECK(body.find("sbg1[u / 4] |= ") < barrier);
          CHECK(k.plan.ctas_per_sm == 6);
          // A thread's rows are r, r+32, r+64, r+96 of a 128-row block (the grid in whole blocks), and
          // lane 16k stores its 4 blocks' bytes a word a row, or as one atom line where a group
          // holds the 4 rows (docs/perf-log.md#grouped-rows-stores).
          CHECK(k.plan.direct().row_step == 32);
          CHECK(k.plan.direct().pad_rows == 128);
          CHECK(body.find("const mx_i64 row0 = gi / 32 * 128 + gi % 32;") < search);
          const size_t gather = body.find("b1 = __shfl_down_sync(0xffffffffu, b0, 4)");
          const size_t store = body.find(
              "mx_grouped_rows_store4(static_cast<mx_u8*>(P.out[1]), mx_gp1, C, nc - C < 4 ? nc - C : 4, "
              "(nc + 3) / 4 * 4,\n                               mx_transpose4x4(b0, b1, b2, b3));");
          CHECK(gather > barrier);
          CHECK(gather != std::string::npos);
          CHECK(store > gather);
          CHECK(store != std::string::npos);
          CHECK(body.find("mx_grouped_blocked_offset") == std::string::npos);
        } else {
          CHECK(body.find("mx_grouped_blocked_offset") != std::string::npos);
          CHECK(body.find("mx_blocked_offset") == std::string::npos);
          // K groups in the columns kernel: warp 0 finds the tile's 4 scale columns' groups right
          // after issuing its loads (fast and tail paths), and each scale starts from its column's
          // cursor (a walk only past the last end; docs/perf-log.md#grouped-cols-table).
          CHECK((grouped_cols_table_n(k) == 5) == table);  // 4 columns, then Q_G
          if (table) {
            const std::string fill = fmt::format(
                "if (warp == 0) {{\n      mx_grouped_cols_table(mx_gt1, 4, static_cast<const int*>(P.in[1]), P.in_stride[1][0], "
                "P.in_extent[1], 32, P.shape[{}], t_r0 / 32);\n",
                block_axis);
            const size_t f1 = body.find(fill), f2 = body.find(fill, f1 + 1), bar = body.rfind("__syncthreads();");
            CHECK(f1 != std::string::npos);
            CHECK(f2 != std::string::npos);
            CHECK(body.find(fill, f2 + 1) == std::string::npos);
            CHECK(body.find("mx_ld16_l2(") < f1);  // after the loads are issued
            CHECK(f2 < bar);
            CHECK(body.find("MxGroupCursor gcur = mx_gt1[ir];") > bar);
            CHECK(body.find("mx_grouped_blocked_offset<false>(gcur, ") > bar);
            CHECK(body.find("MxGroupCursor gcur;") == std::string::npos);
            // Its padding (no memset): warp 0 zeroes what the tile owns right after its table, in
            // both paths, before the barrier (docs/perf-log.md#grouped-cols-pad); the stores write
            // real scales only.
            const std::string pad = fmt::format(
                "      mx_grouped_cols_pad(static_cast<mx_u8*>(P.out[1]), mx_gt1, 4, t_r0 / 32, t_c0, 256, "
                "P.out_shape[1][{}], P.out_shape[1][{}], P.in_extent[1]);\n    }}\n",
                1 - block_axis, block_axis);
            const size_t p1 = body.find(pad), p2 = body.find(pad, p1 + 1);
            CHECK(p1 > f1);
            CHECK(p1 != std::string::npos);
            CHECK(p2 > f2);
            CHECK(p2 != std::string::npos);
            CHECK(p2 < bar);
            CHECK(body.find("if (gs_r < gs_nr && gs_c < gs_nc) {") > bar);
          } else {
            // The walk keeps the group it found last: one cursor, declared before the scales' loop.
            const std::string cur = k.plan.kind == KernelKind::direct ? "gcur1" : "gcur";
            const size_t decl = body.find(fmt::format("MxGroupCursor {};", cur));
            CHECK(decl != std::string::npos);
            CHECK(body.find(fmt::format("mx_grouped_blocked_offset<{}>({}, ",
                                        group_axis == 1 - block_axis ? "true" : "false", cur)) > decl);
          }
        }
        CHECK(body.find("Rp * Cp") == std::string::npos);
        CHECK(k.plan.params.fields.back().what == Param::in_extent);
        CHECK(k.plan.params.fields.back().words == 2);
      }
}

TEST_CASE("kernels without a grouped layout include neither mx_grouped.cuh nor in_extent") {
  auto x = input("x", DType::bf16, rank(2));
  auto s = e8m0_scale(amax(blocks(x, 1, 32)), e4m3, ScaleRule::rceil);
  const Pipeline p = pipeline({output("q", cast(e4m3, x / s)), output("s", s, layout::blocked_128x4())});
  const GeneratedKernel k = generate(p, Target::parse("sm_90a"), default_stride_class(p));
  CHECK(k.source.find("mx_grouped_blocked_offset") == std::string::npos);
  CHECK(k.source.find("#include \"mx_grouped.cuh\"") == std::string::npos);
  CHECK(k.headers == std::vector<std::string>{"mx_math.cuh", "prelude.cuh", "convert.cuh"});
  CHECK(k.source.find("in_extent") == std::string::npos);
  CHECK(k.source.find("mx_blocked_offset") != std::string::npos);
  for (const ParamLayout::Field& f : k.plan.params.fields) CHECK(f.what != Param::in_extent);
  CHECK(k.plan.zero_outputs.empty());
}

TEST_CASE("grouped_blocked_128x4: the direct kernel places token-group rows in 32 bits; the launch keeps them there") {
  const GeneratedKernel k = generate(grouped(DType::bf16, 1, 0), Target::parse("sm_90a"), input_order(false));
  REQUIRE(k.plan.kind == KernelKind::direct);
  // Each group pads at most 127 rows: the extent plus 128 per group stays below 2^31.
  CHECK(k.plan.launch({16384, 5120}, 16).grid[0] > 0u);
  CHECK(k.plan.launch({(int64_t(1) << 31) - 128 * 1000, 64}, 999).grid[0] > 0u);
  CHECK_THROWS_WITH_AS(
      k.plan.launch({(int64_t(1) << 31) - 128 * 1000, 64}, 1000),
      doctest::Contains("launch: 1000 groups of a grouped scale layout pad an extent of 2147355648 along axis 0 "
                        "past 2^31 - 1 rows"),
      UsageError);
  CHECK_THROWS_AS(k.plan.launch({1024, 64}, int64_t(1) << 40), UsageError);
  // K groups in the columns kernel: its table counts the groups in 32 bits.
  const GeneratedKernel kc = generate(grouped(DType::bf16, 0, 0), Target::parse("sm_90a"), input_order(false));
  REQUIRE(kc.plan.kind == KernelKind::columns);
  CHECK(kc.plan.launch({4096, 256}, (int64_t(1) << 31) - 1).grid[0] > 0u);
  CHECK_THROWS_WITH_AS(kc.plan.launch({4096, 256}, int64_t(1) << 31),
                       doctest::Contains("launch: an offsets input of 2147483648 groups"), UsageError);
}
