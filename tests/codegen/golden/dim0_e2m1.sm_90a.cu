// ==== mxjit generated kernel ========================================================
// mxjit_direct_dim0_e2m1_floor_bf16_948acaf7
// generator mxjit-gen-52  target sm_90a  stride class sc(1a)
// pipeline bf16[2] -> mxfp4.e2m1 floor nan_block blocks(1,32) q:row_major s:linear
// pipeline hash b0d8d425b4240104165a4b62ed1c9caa
// plan
//   direct: block_cols=32 lanes_per_block=4 chunks_per_thread=4 pad=1x1 row_step=1 wide_rows=0 scatter_scales=[1] e2m1_words=[1] eight_at_once=[0] blocked_scales=[-,-]
//   launch: rank=2 ax_r=0 ax_c=1 batch=[] threads=256 ctas_per_sm=6 smem=0 zero=[] prepass=none
//   params: in:1 out:2 shape:2 in_stride:2 out_stride:4 out_shape:4 tiles_r:1 tiles_c:1 aux:1
//   schedule: tune()
// ====================================================================================
#define MXJIT_HW_UE8M0 0
#define MXJIT_HW_FP4FP6 0
#define MXJIT_HW_FP8 1
#define MXJIT_HW_BF16X2 1
#include "mx_math.cuh"
#include "prelude.cuh"
#include "convert.cuh"

// Kernel parameters: every field 8 bytes, filled by the launcher in this order (Plan::params).
struct MxParams {
  const void* in[1];
  void* out[2];
  mx_i64 shape[2];
  mx_i64 in_stride[1][2];
  mx_i64 out_stride[2][2];
  mx_i64 out_shape[2][2];
  mx_i64 tiles_r;
  mx_i64 tiles_c;
  const void* aux;  // the workspace: NVFP4's pre-pass tensor amax (FP32), else null
};

extern "C" __global__ void __launch_bounds__(256, 6) mxjit_direct_dim0_e2m1_floor_bf16_948acaf7(const MxParams P) {
  const int n_c = int(P.shape[1]);
  const int nblk = (n_c + 32 - 1) / 32;
  const unsigned slots = unsigned(nblk) * 4u;  // chunk slots per row: 4 lanes per block
  const mx_i64 rows = P.tiles_r;
  bool ok[4];
  int cc_[4];
  int ix0_[4];
  mx_v16 r0_[4][1];
  // Phase 1: all loads first, so that several are in flight per thread.
  // grid.x runs along the slots of a row (32-bit), grid.y/z over groups of rows.
  const unsigned slot = blockIdx.x * blockDim.x + threadIdx.x;
  const int cc0 = int(slot / 4u) * 32 + int(slot % 4u) * 8;
  const mx_i64 row0 = (mx_i64(blockIdx.z) * gridDim.y + blockIdx.y) * 4;
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const mx_i64 row = row0 + u;
    ok[u] = row < rows && slot < slots;
    cc_[u] = cc0;
    ix0_[u] = int(row);
    {
      const mx_i64 base = ix0_[u] * P.in_stride[0][0];
      if (ok[u] && cc_[u] + 8 <= n_c) {
        r0_[u][0] = mx_ld16(static_cast<const char*>(P.in[0]) + (base + cc_[u]) * 2);
      } else {
        {
          mx_u32 w[4] = {0u, 0u, 0u, 0u};
          for (int e = 0; e < 8; ++e) { const int c = cc_[u] + e; if (ok[u] && c < n_c) w[e >> 1] |= mx_u32(static_cast<const mx_u16*>(P.in[0])[base + c]) << (16 * (e & 1)); }
          r0_[u][0] = mx_v16{w[0], w[1], w[2], w[3]};
        }
      }
    }
  }
  const bool oal0 = ((reinterpret_cast<mx_u64>(P.out[0]) | mx_u64(P.out_stride[0][0])) & 3u) == 0;
  const int lane = threadIdx.x & 31;
  mx_u32 pw0[4];  // scale 0: each row's packed |x| max
#pragma unroll
  for (int u = 0; u < 4; ++u) pw0[u] = mx_max_bf16x2(mx_max_bf16x2(r0_[u][0].x & 0x7fff7fffu, r0_[u][0].y & 0x7fff7fffu), mx_max_bf16x2(r0_[u][0].z & 0x7fff7fffu, r0_[u][0].w & 0x7fff7fffu));
  // Scales 0: one per lane (reduce-scatter over the block's lanes, xors 2, 1).
  mx_u32 d0[4];
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    d0[t] = mx_umax((pw0[t] << 16), (pw0[t] & 0xffff0000u));
  }
  {
    const bool hi = (lane & 2) != 0;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const mx_u32 keep = hi ? d0[i + 2] : d0[i], send = hi ? d0[i] : d0[i + 2];
      const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, send, 2);
      d0[i] = o_ > keep ? o_ : keep;
    }
  }
  {
    const bool hi = (lane & 1) != 0;
#pragma unroll
    for (int i = 0; i < 1; ++i) {
      const mx_u32 keep = hi ? d0[i + 1] : d0[i], send = hi ? d0[i] : d0[i + 1];
      const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, send, 1);
      d0[i] = o_ > keep ? o_ : keep;
    }
  }
  const int tb0 = ((lane & 2) ? 2 : 0) + ((lane & 1) ? 1 : 0);
  mx_u32 own0[1];
#pragma unroll
  for (int i = 0; i < 1; ++i) {
    const mx_u32 m = d0[i];
    mx_u32 byte = 0u, flag = 0u;  // flag: 0 normal, 1 zero block, 2 NaN block
    float mult = 0.0f;
    byte = mx_scale_floor(m, 2);
    flag = m >= 0x7f800000u ? 2u : (m == 0u ? 1u : 0u);
    byte = flag == 2u ? 255u : (flag == 1u ? 0u : byte);
    mult = flag == 0u ? mx_e8m0_recip(byte) : 0.0f;
    {  // scales 's' from their owner lane
      const int u = tb0 + i;
      bool okr;
      int ix0;
      const mx_i64 row = row0 + u;
      okr = row < rows && slot < slots;
      ix0 = int(row);
      if (okr) static_cast<mx_u8*>(P.out[1])[(cc0 / 32) * P.out_stride[1][1] + ix0 * P.out_stride[1][0]] = mx_u8(byte);
    }
    own0[i] = flag ? flag : mx_bits(mult);
  }
  if (__all_sync(0xffffffffu, own0[0] > 2u)) {  // no flagged block in the warp
    // Phase 2: values, block scales (amax by shuffles within each block's lanes), codes.
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int cc = cc_[u];
      const mx_i64 ix0 = ix0_[u];
      const bool full = ok[u] && cc + 8 <= n_c;
      mx_u32 flag0;
      float mult0;
      {
        const mx_u32 w_ = __shfl_sync(0xffffffffu, own0[0], (lane & ~3) | ((u % 4) >= 2 ? 2 : 0) | ((u % 2) >= 1 ? 1 : 0));
        const mx_u32 flag = 0u;
        const float mult = mx_float(w_);
        flag0 = flag; mult0 = mult;
      }
      {  // output 'q' (e2m1)
        mx_u32 wd[1];
        wd[0] = mx_e2m1x8_bf16_finite(r0_[u][0].x, r0_[u][0].y, r0_[u][0].z, r0_[u][0].w, mult0);
        if (flag0) wd[0] = 0u;  // zero and NaN blocks: E2M1 has no NaN code
        mx_u8* const ob = static_cast<mx_u8*>(P.out[0]) + ((cc >> 1) + ix0 * P.out_stride[0][0]);
        if (full && oal0) *reinterpret_cast<mx_u32*>(ob) = wd[0];
        else {
#pragma unroll
          for (int e = 0; e < 8; e += 2) if (ok[u] && cc + e < n_c) ob[e >> 1] = mx_u8(wd[e >> 3] >> (4 * (e & 7)));
        }
      }
    }
  } else {
    // Phase 2: values, block scales (amax by shuffles within each block's lanes), codes.
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int cc = cc_[u];
      const mx_i64 ix0 = ix0_[u];
      const bool full = ok[u] && cc + 8 <= n_c;
      mx_u32 flag0;
      float mult0;
      {
        const mx_u32 w_ = __shfl_sync(0xffffffffu, own0[0], (lane & ~3) | ((u % 4) >= 2 ? 2 : 0) | ((u % 2) >= 1 ? 1 : 0));
        const mx_u32 flag = w_ < 3u ? w_ : 0u;
        const float mult = w_ < 3u ? 0.0f : mx_float(w_);
        flag0 = flag; mult0 = mult;
      }
      {  // output 'q' (e2m1)
        mx_u32 wd[1];
        wd[0] = mx_e2m1x8_bf16_finite(r0_[u][0].x, r0_[u][0].y, r0_[u][0].z, r0_[u][0].w, mult0);
        if (flag0) wd[0] = 0u;  // zero and NaN blocks: E2M1 has no NaN code
        mx_u8* const ob = static_cast<mx_u8*>(P.out[0]) + ((cc >> 1) + ix0 * P.out_stride[0][0]);
        if (full && oal0) *reinterpret_cast<mx_u32*>(ob) = wd[0];
        else {
#pragma unroll
          for (int e = 0; e < 8; e += 2) if (ok[u] && cc + e < n_c) ob[e >> 1] = mx_u8(wd[e >> 3] >> (4 * (e & 7)));
        }
      }
    }
  }
}
