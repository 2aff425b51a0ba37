// ==== mxjit generated kernel ========================================================
// mxjit_columns_dim1_e4m3_rceil_bf16_8dcded4b
// generator mxjit-gen-52  target sm_100a  stride class sc(2a)
// pipeline bf16[3] -> mxfp8.e4m3 rceil nan_block blocks(1,32) q:expert_col_major s:blocked128x4
// pipeline hash 4f8164d3723f02942b8a6d490d52c4f4
// plan
//   columns: rows_per_thread=16 lanes_along_rows=8 tile=128x256 stages=1 rowwise_scale=0 codes_staged=0 lines_padded=0 bulk_copy_out=0 scatter_scales=[1]
//   launch: rank=3 ax_r=1 ax_c=2 batch=[0] threads=256 ctas_per_sm=2 smem=0 zero=[] prepass=none
//   params: in:1 out:2 shape:3 in_stride:3 out_stride:6 out_shape:6 tiles_r:1 tiles_c:1 aux:1
//   schedule: tune()
// ====================================================================================
#define MXJIT_HW_UE8M0 1
#define MXJIT_HW_FP4FP6 1
#define MXJIT_HW_FP8 1
#define MXJIT_HW_BF16X2 1
#include "mx_math.cuh"
#include "prelude.cuh"
#include "convert.cuh"

// Kernel parameters: every field 8 bytes, filled by the launcher in this order (Plan::params).
struct MxParams {
  const void* in[1];
  void* out[2];
  mx_i64 shape[3];
  mx_i64 in_stride[1][3];
  mx_i64 out_stride[2][3];
  mx_i64 out_shape[2][3];
  mx_i64 tiles_r;
  mx_i64 tiles_c;
  const void* aux;  // the workspace: NVFP4's pre-pass tensor amax (FP32), else null
};

extern "C" __global__ void __launch_bounds__(256, 2) mxjit_columns_dim1_e4m3_rceil_bf16_8dcded4b(const MxParams P) {
  const int lane = threadIdx.x & 31, rg = lane % 8, cl = lane / 8, warp = threadIdx.x >> 5;
  const int lane_r0 = rg * 16, lane_c0 = warp * 32 + cl * 8;  // the thread's offsets in a tile (axes 1, 2)
  const int n_r = int(P.shape[1]), n_c = int(P.shape[2]);
  __shared__ mx_u8 s0_info[1024];
  unsigned t_ = blockIdx.x;
  const int tr = int(t_ % unsigned(P.tiles_r)); t_ /= unsigned(P.tiles_r);
  const int tc = int(t_ % unsigned(P.tiles_c)); t_ /= unsigned(P.tiles_c);
  const mx_i64 bi0 = t_ % unsigned(P.shape[0]); t_ /= unsigned(P.shape[0]);
  const int t_r0 = tr * 128, t_c0 = tc * 256;  // the tile's origin
  const int r0 = t_r0 + lane_r0, c0 = t_c0 + lane_c0;  // this thread's rows r0 .. r0+15, columns c0 .. c0+7
  const bool rows_full = r0 + 16 <= n_r;
  const bool cols_full = c0 + 8 <= n_c;
  if (__all_sync(0xffffffffu, rows_full && cols_full && (P.out_stride[0][1] == 1 && ((reinterpret_cast<mx_u64>(P.out[0]) | mx_u64(P.out_stride[0][0]) | mx_u64(P.out_stride[0][2])) & 15u) == 0))) {
    mx_u32 w0[16][4];
    {
      const mx_u16* const p = static_cast<const mx_u16*>(P.in[0]) + (bi0 * P.in_stride[0][0] + r0 * P.in_stride[0][1] + c0);
      const mx_i64 rs = P.in_stride[0][1];
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        const mx_v16 v = mx_ld16_l2(p + r * rs);
        w0[r][0] = v.x; w0[r][1] = v.y; w0[r][2] = v.z; w0[r][3] = v.w;
      }
    }
    mx_u32 pm0[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      pm0[j] = w0[0][j] & 0x7fff7fffu;
#pragma unroll
      for (int r = 1; r < 16; ++r) pm0[j] = mx_max_bf16x2(pm0[j], w0[r][j] & 0x7fff7fffu);
    }
    mx_u8* ob0_ = static_cast<mx_u8*>(P.out[0]) + (bi0 * P.out_stride[0][0] + r0 * P.out_stride[0][1] + c0 * P.out_stride[0][2]);
    const mx_i64 os0 = P.out_stride[0][2];
    // Scales 0: one per lane (reduce-scatter over the block's lanes, xors 1).
    mx_u32 d0[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      d0[t] = (t & 1) ? (pm0[t >> 1] & 0xffff0000u) : (pm0[t >> 1] << 16);
    }
    {
      const bool hi = (lane & 1) != 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const mx_u32 keep = hi ? d0[i + 4] : d0[i], send = hi ? d0[i] : d0[i + 4];
        const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, send, 1);
        d0[i] = o_ > keep ? o_ : keep;
      }
    }
    const int tb0 = ((lane & 1) ? 4 : 0);
    mx_u32 own0[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const mx_u32 m = d0[i];
      mx_u32 byte = 0u, flag = 0u;  // flag: 0 normal, 1 zero block, 2 NaN block
      float mult = 0.0f;
      byte = mx_scale_rceil(m, mx_float(0x3b124925u));
      flag = m >= 0x7f800000u ? 2u : (m == 0u ? 1u : 0u);
      byte = flag == 2u ? 255u : (flag == 1u ? 0u : byte);
      mult = flag == 0u ? mx_e8m0_recip(byte) : 0.0f;
      {
        const int t = tb0 + i;
        s0_info[((r0 - t_r0) / 32) * 256 + (c0 - t_c0) + t] = byte;
      }
      own0[i] = flag ? flag : mx_bits(mult);
    }
    if (__all_sync(0xffffffffu, own0[0] > 2u && own0[1] > 2u && own0[2] > 2u && own0[3] > 2u)) {  // no flagged block in the warp
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        float col[16];
#pragma unroll
        for (int r = 0; r < 16; ++r) {
          const float t0 = mx_float((c & 1) ? (w0[r][c >> 1] & 0xffff0000u) : (w0[r][c >> 1] << 16));
          col[r] = t0;
        }
        {
          const mx_u32 w_ = __shfl_sync(0xffffffffu, own0[c % 4], (lane & ~1) | ((c % 8) >= 4 ? 1 : 0));
          const mx_u32 flag0 = 0u;
          const float mult0 = mx_float(w_);
          {  // output 'q' (e4m3)
            float y[16];
#pragma unroll
            for (int e = 0; e < 16; ++e) {
              float y_ = col[e];
              y_ *= mult0;
              y[e] = y_;
            }
            const mx_u32 pr0 = mx_cvt_e4m3x2(y[0], y[1]);
            const mx_u32 pr1 = mx_cvt_e4m3x2(y[2], y[3]);
            const mx_u32 pr2 = mx_cvt_e4m3x2(y[4], y[5]);
            const mx_u32 pr3 = mx_cvt_e4m3x2(y[6], y[7]);
            const mx_u32 pr4 = mx_cvt_e4m3x2(y[8], y[9]);
            const mx_u32 pr5 = mx_cvt_e4m3x2(y[10], y[11]);
            const mx_u32 pr6 = mx_cvt_e4m3x2(y[12], y[13]);
            const mx_u32 pr7 = mx_cvt_e4m3x2(y[14], y[15]);
            mx_u32 wd[4];
            wd[0] = pr0 | (pr1 << 16);
            wd[1] = pr2 | (pr3 << 16);
            wd[2] = pr4 | (pr5 << 16);
            wd[3] = pr6 | (pr7 << 16);
            if (flag0) {
              const mx_u32 f_ = flag0 == 1u ? 0u : 0x7f7f7f7fu;
              wd[0] = f_;
              wd[1] = f_;
              wd[2] = f_;
              wd[3] = f_;
            }
            mx_u8* const ob = ob0_;
            mx_st16(ob, mx_v16{wd[0], wd[1], wd[2], wd[3]});
            ob0_ += os0;
          }
        }
      }
    } else {
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        float col[16];
#pragma unroll
        for (int r = 0; r < 16; ++r) {
          const float t0 = mx_float((c & 1) ? (w0[r][c >> 1] & 0xffff0000u) : (w0[r][c >> 1] << 16));
          col[r] = t0;
        }
        {
          const mx_u32 w_ = __shfl_sync(0xffffffffu, own0[c % 4], (lane & ~1) | ((c % 8) >= 4 ? 1 : 0));
          const mx_u32 flag0 = w_ < 3u ? w_ : 0u;
          const float mult0 = w_ < 3u ? 0.0f : mx_float(w_);
          {  // output 'q' (e4m3)
            float y[16];
#pragma unroll
            for (int e = 0; e < 16; ++e) {
              float y_ = col[e];
              y_ *= mult0;
              y[e] = y_;
            }
            const mx_u32 pr0 = mx_cvt_e4m3x2(y[0], y[1]);
            const mx_u32 pr1 = mx_cvt_e4m3x2(y[2], y[3]);
            const mx_u32 pr2 = mx_cvt_e4m3x2(y[4], y[5]);
            const mx_u32 pr3 = mx_cvt_e4m3x2(y[6], y[7]);
            const mx_u32 pr4 = mx_cvt_e4m3x2(y[8], y[9]);
            const mx_u32 pr5 = mx_cvt_e4m3x2(y[10], y[11]);
            const mx_u32 pr6 = mx_cvt_e4m3x2(y[12], y[13]);
            const mx_u32 pr7 = mx_cvt_e4m3x2(y[14], y[15]);
            mx_u32 wd[4];
            wd[0] = pr0 | (pr1 << 16);
            wd[1] = pr2 | (pr3 << 16);
            wd[2] = pr4 | (pr5 << 16);
            wd[3] = pr6 | (pr7 << 16);
            if (flag0) {
              const mx_u32 f_ = flag0 == 1u ? 0u : 0x7f7f7f7fu;
              wd[0] = f_;
              wd[1] = f_;
              wd[2] = f_;
              wd[3] = f_;
            }
            mx_u8* const ob = ob0_;
            mx_st16(ob, mx_v16{wd[0], wd[1], wd[2], wd[3]});
            ob0_ += os0;
          }
        }
      }
    }
  } else {
    mx_u32 w0[16][4];
#pragma unroll 1
    for (int r = 0; r < 16; ++r) {
      const int c = 0;
      const mx_u16* const p = static_cast<const mx_u16*>(P.in[0]) + (bi0 * P.in_stride[0][0] + (r0 + r) * P.in_stride[0][1] + (c0 + c));
      if (cols_full && r0 + r < n_r) {
        const mx_v16 v = mx_ld16_l2(p);
        w0[r][0] = v.x; w0[r][1] = v.y; w0[r][2] = v.z; w0[r][3] = v.w;
      } else {
        for (int e = 0; e < 4; ++e) w0[r][e] = 0u;
        if (r0 + r < n_r) for (int e = 0; e < 8; ++e) if (c0 + e < n_c) w0[r][e >> 1] |= mx_u32(p[e]) << (16 * (e & 1));
      }
    }
    mx_u32 pm0[4];
#pragma unroll 1
    for (int j = 0; j < 4; ++j) {
      pm0[j] = w0[0][j] & 0x7fff7fffu;
#pragma unroll 1
      for (int r = 1; r < 16; ++r) pm0[j] = mx_max_bf16x2(pm0[j], w0[r][j] & 0x7fff7fffu);
    }
    // Scales 0: blocks of 32 along axis 1 (2 lanes), column by column.
#pragma unroll 1
    for (int c = 0; c < 8; ++c) {
      float col[16];
#pragma unroll 1
      for (int r = 0; r < 16; ++r) {
        const float t0 = mx_float((c & 1) ? (w0[r][c >> 1] & 0xffff0000u) : (w0[r][c >> 1] << 16));
        col[r] = t0;
      }
      {
        mx_u32 m = (c & 1) ? (pm0[c >> 1] & 0xffff0000u) : (pm0[c >> 1] << 16);
        { const mx_u32 o_ = __shfl_xor_sync(0xffffffffu, m, 1); m = o_ > m ? o_ : m; }
        mx_u32 byte = 0u, flag = 0u;  // flag: 0 normal, 1 zero block, 2 NaN block
        float mult = 0.0f;
        byte = mx_scale_rceil(m, mx_float(0x3b124925u));
        flag = m >= 0x7f800000u ? 2u : (m == 0u ? 1u : 0u);
        byte = flag == 2u ? 255u : (flag == 1u ? 0u : byte);
        mult = flag == 0u ? mx_e8m0_recip(byte) : 0.0f;
        mx_u32 flag0, byte0;
        float mult0;
        flag0 = flag; mult0 = mult; byte0 = byte;
        const int r = 0;
        if ((rg % 2) == 0 && r0 < n_r && c0 + c < n_c) {
          const int lb = ((r0 - t_r0) / 32) * 256 + (c0 - t_c0) + c;
          s0_info[lb] = byte0;
        }
        {  // output 'q' (e4m3)
          float y[16];
#pragma unroll 1
          for (int e = 0; e < 16; ++e) {
            float y_ = col[e];
            y_ *= mult0;
            y[e] = y_;
          }
          const mx_u32 pr0 = mx_cvt_e4m3x2(y[0], y[1]);
          const mx_u32 pr1 = mx_cvt_e4m3x2(y[2], y[3]);
          const mx_u32 pr2 = mx_cvt_e4m3x2(y[4], y[5]);
          const mx_u32 pr3 = mx_cvt_e4m3x2(y[6], y[7]);
          const mx_u32 pr4 = mx_cvt_e4m3x2(y[8], y[9]);
          const mx_u32 pr5 = mx_cvt_e4m3x2(y[10], y[11]);
          const mx_u32 pr6 = mx_cvt_e4m3x2(y[12], y[13]);
          const mx_u32 pr7 = mx_cvt_e4m3x2(y[14], y[15]);
          mx_u32 wd[4];
          wd[0] = pr0 | (pr1 << 16);
          wd[1] = pr2 | (pr3 << 16);
          wd[2] = pr4 | (pr5 << 16);
          wd[3] = pr6 | (pr7 << 16);
          if (flag0) {
            const mx_u32 f_ = flag0 == 1u ? 0u : 0x7f7f7f7fu;
            wd[0] = f_;
            wd[1] = f_;
            wd[2] = f_;
            wd[3] = f_;
          }
          mx_u8* const ob = static_cast<mx_u8*>(P.out[0]) + (bi0 * P.out_stride[0][0] + (r0 + r) * P.out_stride[0][1] + (c0 + c) * P.out_stride[0][2]);
          if (rows_full && c0 + c < n_c && (P.out_stride[0][1] == 1 && ((reinterpret_cast<mx_u64>(P.out[0]) | mx_u64(P.out_stride[0][0]) | mx_u64(P.out_stride[0][2])) & 15u) == 0)) mx_st16(ob, mx_v16{wd[0], wd[1], wd[2], wd[3]});
          else {
#pragma unroll 1
            for (int e = 0; e < 16; ++e) if (r0 + e < n_r && c0 + c < n_c) ob[e] = mx_u8(wd[e >> 2] >> (8 * (e & 3)));
          }
        }
      }
    }
  }
  __syncthreads();
  {
    const int r0 = t_r0, c0 = t_c0, nr = n_r - r0 < 128 ? n_r - r0 : 128, nc = n_c - c0 < 256 ? n_c - c0 : 256;
  // Scales 's' (blocked128x4) of the tile, from shared memory.
  {
    const mx_i64 sr0 = r0 / 32, sc0 = c0;
    int nsr = (nr + 32 - 1) / 32, nsc = nc;
    const mx_i64 ext_r = P.out_shape[1][1];
    const mx_i64 ext_c = P.out_shape[1][2];
    const bool whole = nsr == 4 && nsc == 256;
    if (tr == P.tiles_r - 1) nsr = int(((ext_r + 4 - 1) / 4) * 4 - sr0);
    if (tc == P.tiles_c - 1) nsc = int(((ext_c + 128 - 1) / 128) * 128 - sc0);
    const unsigned nR = unsigned(P.out_shape[1][2]);
    const unsigned Cp = (unsigned(P.out_shape[1][1]) + 4 - 1) / 4 * 4;
    if (whole && nsr == 4 && nsc == 256 && (reinterpret_cast<mx_u64>(P.out[1]) & 15u) == 0) {  // whole 128 x 4 atoms
      for (int k = int(threadIdx.x); k < 64; k += 256) {
        const int t = k % 32, sr = k / 32 * 128, sc = 0;  // the atom's first scale (row, column)
        const int ir = sc, ic = sr;
        const mx_i64 gr = sr0 + ir;
        const mx_i64 gc = sc0 + ic;
        mx_u32 w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int e = 0; e < 16; ++e) w[e / 4] |= mx_u32(s0_info[(ir + e % 4) * 256 + ic + e / 4 * 32 + t] & 0xffu) << (8 * (e % 4));
        *reinterpret_cast<uint4*>(static_cast<mx_u8*>(P.out[1]) + (((0) * P.out_shape[1][0] + bi0) * mx_i64((nR + 128 - 1) / 128 * 128) * Cp + mx_blocked_offset32<128, 4>(unsigned(gc), unsigned(gr), Cp)) + t * 16) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    } else
    for (int k = threadIdx.x; k < nsr * nsc; k += blockDim.x) {
      const int ir = k % nsr, ic = k / nsr;
      const mx_i64 gr = sr0 + ir, gc = sc0 + ic;
      const bool real = gr < ext_r && gc < ext_c;
      const int lb = ir * 256 + ic;
      const mx_u8 val = real ? mx_u8(s0_info[lb] & 0xffu) : mx_u8(0);
      static_cast<mx_u8*>(P.out[1])[((0) * P.out_shape[1][0] + bi0) * mx_i64((nR + 128 - 1) / 128 * 128) * Cp + mx_blocked_offset32<128, 4>(unsigned(gc), unsigned(gr), Cp)] = val;
    }
  }
  }
}
