// Hand-written cast kernels used to find the kernel shapes that reach the copy roofline on an H200
// (an experiment, not part of the build). Build and run on a GPU machine:
//   nvcc -O3 -arch=sm_90a -std=c++17 -cudart static -o hand_casts bench/experiments/hand_casts.cu
//   ./hand_casts 16384 16384
// dim0_A/B: dim0 MXFP8-like casts (simplified FLOOR scale); dim1_C/G/H: dim1 casts with different
// per-column store widths (32, 64, 128 contiguous bytes per warp store); fused_F/H: dim0+dim1.
// MODE 1/2 of dim1_G/H time the write side / read side alone; dim0_S compares scale layouts.
// README.md quotes the results.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1);} } while (0)
typedef unsigned u32;
__device__ __forceinline__ u32 cvt2(float lo, float hi) { unsigned short r; asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo)); return r; }
__device__ __forceinline__ float bf_lo(u32 w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(u32 w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float bf_lo_o(u32 w) { u32 o; asm volatile("shl.b32 %0, %1, 16;" : "=r"(o) : "r"(w)); return __uint_as_float(o); }
__device__ __forceinline__ float bf_hi_o(u32 w) { u32 o; asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(o) : "r"(w)); return __uint_as_float(o); }
__device__ __forceinline__ u32 absb(u32 w) { return w & 0x7fff7fffu; }
// amax over packed bf16 pair bits: max of the two halves (as u32 after shifting)
__device__ __forceinline__ u32 pmax(u32 m, u32 w) { u32 a = (w & 0x7fffu) << 16, b = w & 0x7fff0000u; m = a > m ? a : m; return b > m ? b : m; }
__device__ __forceinline__ void scale_of(u32 m, u32& byte, float& mult) {
  int se = int((m >> 23) & 0xff) - 8; se = se < 1 ? 1 : (se > 254 ? 254 : se);
  byte = m == 0 ? 0u : u32(se); mult = __uint_as_float(u32(254 - se) << 23);
}
// ---- dim0 A: thread per 32-block, R rows per thread
template <int R>
__global__ void __launch_bounds__(256) dim0_A(const uint4* __restrict__ in, uint4* __restrict__ out, uint8_t* __restrict__ sc, u32 M, u32 K) {
  const u32 nb = K / 32; const u32 b = blockIdx.x * 256 + threadIdx.x; if (b >= nb) return;
  const u32 r0 = blockIdx.y * R;
  uint4 v[R][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < 4; ++i) v[r][i] = __ldg(in + (size_t(r0 + r) * K + b * 32) / 8 + i);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    u32 m = 0; const u32* w = reinterpret_cast<const u32*>(v[r]);
#pragma unroll
    for (int i = 0; i < 16; ++i) m = pmax(m, w[i]);
    u32 byte; float mult; scale_of(m, byte, mult);
    u32 o[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) o[i] = cvt2(bf_lo(w[2*i]) * mult, bf_hi(w[2*i]) * mult) | (cvt2(bf_lo(w[2*i+1]) * mult, bf_hi(w[2*i+1]) * mult) << 16);
    uint4* op = out + (size_t(r0 + r) * K + b * 32) / 16;
    op[0] = make_uint4(o[0], o[1], o[2], o[3]); op[1] = make_uint4(o[4], o[5], o[6], o[7]);
    sc[size_t(r0 + r) * nb + b] = byte;
  }
}
// ---- dim0 B: 4 lanes per block, each 8 elems, R rows per thread
template <int R>
__global__ void __launch_bounds__(256) dim0_B(const uint4* __restrict__ in, uint2* __restrict__ out, uint8_t* __restrict__ sc, u32 M, u32 K) {
  const u32 s = blockIdx.x * 256 + threadIdx.x; if (s >= K / 8) return;
  const u32 r0 = blockIdx.y * R;
  uint4 v[R];
#pragma unroll
  for (int r = 0; r < R; ++r) v[r] = __ldg(in + (size_t(r0 + r) * K) / 8 + s);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const u32* w = reinterpret_cast<const u32*>(&v[r]);
    u32 m = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) m = pmax(m, w[i]);
    m = max(m, __shfl_xor_sync(~0u, m, 1)); m = max(m, __shfl_xor_sync(~0u, m, 2));
    u32 byte; float mult; scale_of(m, byte, mult);
    u32 o0 = cvt2(bf_lo(w[0]) * mult, bf_hi(w[0]) * mult) | (cvt2(bf_lo(w[1]) * mult, bf_hi(w[1]) * mult) << 16);
    u32 o1 = cvt2(bf_lo(w[2]) * mult, bf_hi(w[2]) * mult) | (cvt2(bf_lo(w[3]) * mult, bf_hi(w[3]) * mult) << 16);
    out[(size_t(r0 + r) * K) / 8 + s] = make_uint2(o0, o1);
    if ((threadIdx.x & 3) == 0) sc[size_t(r0 + r) * (K / 32) + s / 4] = byte;
  }
}
// ---- dim0 S: dim0_B with the scales written linear (MODE 0), blocked 128x4 (MODE 1), or with the
// blocked offset computed but the byte written at the linear address (MODE 2: the arithmetic alone)
template <int R, int MODE>
__global__ void __launch_bounds__(256) dim0_S(const uint4* __restrict__ in, uint2* __restrict__ out, uint8_t* __restrict__ sc, u32 M, u32 K) {
  const u32 s = blockIdx.x * 256 + threadIdx.x; if (s >= K / 8) return;
  const u32 r0 = blockIdx.y * R;
  uint4 v[R];
#pragma unroll
  for (int r = 0; r < R; ++r) v[r] = __ldg(in + (size_t(r0 + r) * K) / 8 + s);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const u32* w = reinterpret_cast<const u32*>(&v[r]);
    u32 m = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) m = pmax(m, w[i]);
    m = max(m, __shfl_xor_sync(~0u, m, 1)); m = max(m, __shfl_xor_sync(~0u, m, 2));
    u32 byte; float mult; scale_of(m, byte, mult);
    u32 o0 = cvt2(bf_lo(w[0]) * mult, bf_hi(w[0]) * mult) | (cvt2(bf_lo(w[1]) * mult, bf_hi(w[1]) * mult) << 16);
    u32 o1 = cvt2(bf_lo(w[2]) * mult, bf_hi(w[2]) * mult) | (cvt2(bf_lo(w[3]) * mult, bf_hi(w[3]) * mult) << 16);
    out[(size_t(r0 + r) * K) / 8 + s] = make_uint2(o0, o1);
    if ((threadIdx.x & 3) == 0) {
      const u32 row = r0 + r, c = s / 4, cp = (K / 32 + 3) / 4 * 4;
      const u32 boff = ((row / 128) * (cp / 4) + c / 4) * 512 + (row % 32) * 16 + ((row % 128) / 32) * 4 + c % 4;
      const size_t lin = size_t(row) * (K / 32) + c;
      if (MODE == 0) sc[lin] = byte;
      else if (MODE == 1) sc[boff] = byte;
      else sc[lin] = byte + (boff == 0xffffffffu);
    }
  }
}
// ---- dim1 C: thread = 32 rows x W cols (W=2,4,8): loads of 2W bytes; out col-major (K, M); scales (K, M/32)
template <int W>
__global__ void __launch_bounds__(256) dim1_C(const uint16_t* __restrict__ in, uint8_t* __restrict__ out, uint8_t* __restrict__ sc, u32 M, u32 K) {
  const u32 c0 = (blockIdx.x * 256 + threadIdx.x) * W; if (c0 >= K) return;
  const u32 r0 = blockIdx.y * 32;
  constexpr int NW = W / 2;  // u32 words per row
  u32 v[32][NW];
#pragma unroll
  for (int r = 0; r < 32; ++r) {
    const uint16_t* p = in + size_t(r0 + r) * K + c0;
    if constexpr (W == 2) v[r][0] = __ldg(reinterpret_cast<const u32*>(p));
    else if constexpr (W == 4) { uint2 t = __ldg(reinterpret_cast<const uint2*>(p)); v[r][0] = t.x; v[r][1] = t.y; }
    else { uint4 t = __ldg(reinterpret_cast<const uint4*>(p)); v[r][0] = t.x; v[r][1] = t.y; v[r][2] = t.z; v[r][3] = t.w; }
  }
#pragma unroll
  for (int j = 0; j < NW; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      u32 m = 0;
#pragma unroll
      for (int r = 0; r < 32; ++r) { u32 a = h ? (v[r][j] & 0x7fff0000u) : ((v[r][j] & 0x7fffu) << 16); m = a > m ? a : m; }
      u32 byte; float mult; scale_of(m, byte, mult);
      u32 o[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        float f[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) f[t] = (h ? bf_hi(v[4*q+t][j]) : bf_lo(v[4*q+t][j])) * mult;
        o[q] = cvt2(f[0], f[1]) | (cvt2(f[2], f[3]) << 16);
      }
      const u32 c = c0 + 2 * j + h;
      uint4* op = reinterpret_cast<uint4*>(out + size_t(c) * M + r0);
      op[0] = make_uint4(o[0], o[1], o[2], o[3]); op[1] = make_uint4(o[4], o[5], o[6], o[7]);
      sc[size_t(c) * (M / 32) + r0 / 32] = byte;
    }
  }
}
// ---- fused F: thread = 32 rows x 4 cols; dim0 (row blocks of 32 = 8 lanes) + dim1
__global__ void __launch_bounds__(256) fused_F(const uint16_t* __restrict__ in, uint8_t* __restrict__ o0, uint8_t* __restrict__ s0,
                                               uint8_t* __restrict__ o1, uint8_t* __restrict__ s1, u32 M, u32 K) {
  const u32 c0 = (blockIdx.x * 256 + threadIdx.x) * 4; if (c0 >= K) return;
  const u32 r0 = blockIdx.y * 32;
  u32 v[32][2];
#pragma unroll
  for (int r = 0; r < 32; ++r) { uint2 t = __ldg(reinterpret_cast<const uint2*>(in + size_t(r0 + r) * K + c0)); v[r][0] = t.x; v[r][1] = t.y; }
  // dim0: per row, amax over 4 local then 8 lanes
#pragma unroll
  for (int r = 0; r < 32; ++r) {
    u32 m = pmax(pmax(0u, v[r][0]), v[r][1]);
    m = max(m, __shfl_xor_sync(~0u, m, 1)); m = max(m, __shfl_xor_sync(~0u, m, 2)); m = max(m, __shfl_xor_sync(~0u, m, 4));
    u32 byte; float mult; scale_of(m, byte, mult);
    u32 w = cvt2(bf_lo(v[r][0]) * mult, bf_hi(v[r][0]) * mult) | (cvt2(bf_lo(v[r][1]) * mult, bf_hi(v[r][1]) * mult) << 16);
    *reinterpret_cast<u32*>(o0 + size_t(r0 + r) * K + c0) = w;
    if ((threadIdx.x & 7) == 0) s0[size_t(r0 + r) * (K / 32) + c0 / 32] = byte;
  }
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      u32 m = 0;
#pragma unroll
      for (int r = 0; r < 32; ++r) { u32 a = h ? (v[r][j] & 0x7fff0000u) : ((v[r][j] & 0x7fffu) << 16); m = a > m ? a : m; }
      u32 byte; float mult; scale_of(m, byte, mult);
      u32 o[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        float f[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) f[t] = (h ? bf_hi(v[4*q+t][j]) : bf_lo(v[4*q+t][j])) * mult;
        o[q] = cvt2(f[0], f[1]) | (cvt2(f[2], f[3]) << 16);
      }
      const u32 c = c0 + 2 * j + h;
      uint4* op = reinterpret_cast<uint4*>(o1 + size_t(c) * M + r0);
      op[0] = make_uint4(o[0], o[1], o[2], o[3]); op[1] = make_uint4(o[4], o[5], o[6], o[7]);
      s1[size_t(c) * (M / 32) + r0 / 32] = byte;
    }
}

// ---- dim1 G: warp = RG row-groups x (32/RG) column lanes; thread = 32 rows x 4 cols; per column RG*32 contiguous bytes
// MODE 0: normal, 1: write-only (no loads), 2: read-only (scales only)
template <int RG, int MODE, bool SWAP>
__global__ void __launch_bounds__(256) dim1_G(const uint16_t* __restrict__ in, uint8_t* __restrict__ out, uint8_t* __restrict__ sc, u32 M, u32 K) {
  constexpr int CL = 32 / RG;  // column lanes per warp
  const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const u32 bx = SWAP ? blockIdx.y : blockIdx.x, by = SWAP ? blockIdx.x : blockIdx.y;
  const u32 c0 = ((bx * 8 + warp) * CL + lane / RG) * 4; if (c0 >= K) return;
  const u32 r0 = by * (32 * RG) + (lane % RG) * 32;
  u32 v[32][2];
#pragma unroll
  for (int r = 0; r < 32; ++r) {
    if (MODE == 1) { v[r][0] = 0x3f803f80u ^ (r * 0x10001u) ^ c0; v[r][1] = v[r][0] ^ 0x00400040u; }
    else { uint2 t = __ldg(reinterpret_cast<const uint2*>(in + size_t(r0 + r) * K + c0)); v[r][0] = t.x; v[r][1] = t.y; }
  }
#pragma unroll
  for (int j = 0; j < 2; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      u32 m = 0;
#pragma unroll
      for (int r = 0; r < 32; ++r) { u32 a = h ? (v[r][j] & 0x7fff0000u) : ((v[r][j] & 0x7fffu) << 16); m = a > m ? a : m; }
      u32 byte; float mult; scale_of(m, byte, mult);
      const u32 c = c0 + 2 * j + h;
      sc[size_t(c) * (M / 32) + r0 / 32] = byte;
      if (MODE == 2) continue;
      u32 o[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        float f[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) f[t] = (h ? bf_hi(v[4*q+t][j]) : bf_lo(v[4*q+t][j])) * mult;
        o[q] = cvt2(f[0], f[1]) | (cvt2(f[2], f[3]) << 16);
      }
      uint4* op = reinterpret_cast<uint4*>(out + size_t(c) * M + r0);
      op[0] = make_uint4(o[0], o[1], o[2], o[3]); op[1] = make_uint4(o[4], o[5], o[6], o[7]);
    }
}

// ---- H1: lane = (cl = lane/8, rg = lane%8); thread = 16 rows x 8 cols (16-B loads); a 32-row block = lanes rg 2b,2b+1.
// warp covers 128 rows x 32 cols; CTA (8 warps along columns) 128 rows x 256 cols. Per column per store: 128 B contiguous.
template <int MODE, bool FUSED, int MB>
__global__ void __launch_bounds__(256, MB) dim1_H(const uint16_t* __restrict__ in, uint8_t* __restrict__ out, uint8_t* __restrict__ sc,
                                              uint8_t* __restrict__ o0, uint8_t* __restrict__ s0, u32 M, u32 K) {
  const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, rg = lane & 7, cl = lane >> 3;
  const u32 c0 = (blockIdx.y * 256 + warp * 32 + cl * 8);
  const u32 r0 = blockIdx.x * 128 + rg * 16;
  u32 v[16][4];
#pragma unroll
  for (int r = 0; r < 16; ++r) {
    if (MODE == 1) { v[r][0] = 0x3f803f80u ^ (r * 0x10001u) ^ c0; v[r][1] = v[r][0] ^ 0x00400040u; v[r][2] = v[r][0] ^ 0x00200020u; v[r][3] = v[r][0] ^ 0x00100010u; }
    else { uint4 t = __ldg(reinterpret_cast<const uint4*>(in + size_t(r0 + r) * K + c0)); v[r][0] = t.x; v[r][1] = t.y; v[r][2] = t.z; v[r][3] = t.w; }
  }
  if (FUSED) {
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      u32 m = pmax(pmax(pmax(pmax(0u, v[r][0]), v[r][1]), v[r][2]), v[r][3]);
      m = max(m, __shfl_xor_sync(~0u, m, 8)); m = max(m, __shfl_xor_sync(~0u, m, 16));
      u32 byte; float mult; scale_of(m, byte, mult);
      u32 w0 = cvt2(bf_lo_o(v[r][0]) * mult, bf_hi_o(v[r][0]) * mult) | (cvt2(bf_lo_o(v[r][1]) * mult, bf_hi_o(v[r][1]) * mult) << 16);
      u32 w1 = cvt2(bf_lo_o(v[r][2]) * mult, bf_hi_o(v[r][2]) * mult) | (cvt2(bf_lo_o(v[r][3]) * mult, bf_hi_o(v[r][3]) * mult) << 16);
      *reinterpret_cast<uint2*>(o0 + size_t(r0 + r) * K + c0) = make_uint2(w0, w1);
      if (cl == 0) s0[size_t(r0 + r) * (K / 32) + c0 / 32] = byte;
    }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      u32 m = 0;
#pragma unroll
      for (int r = 0; r < 16; ++r) { u32 a = h ? (v[r][j] & 0x7fff0000u) : ((v[r][j] & 0x7fffu) << 16); m = a > m ? a : m; }
      m = max(m, __shfl_xor_sync(~0u, m, 1));
      u32 byte; float mult; scale_of(m, byte, mult);
      const u32 c = c0 + 2 * j + h;
      if ((rg & 1) == 0) sc[size_t(c) * (M / 32) + r0 / 32] = byte;
      if (MODE == 2) continue;
      u32 o[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float f[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) f[t] = (h ? bf_hi(v[4*q+t][j]) : bf_lo(v[4*q+t][j])) * mult;
        o[q] = cvt2(f[0], f[1]) | (cvt2(f[2], f[3]) << 16);
      }
      *reinterpret_cast<uint4*>(out + size_t(c) * M + r0) = make_uint4(o[0], o[1], o[2], o[3]);
    }
}
__global__ void fill(uint16_t* p, size_t n, u32 seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    u32 h = u32(i) * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = uint16_t(0x3000u + (h & 0x1fffu) | ((h >> 16) & 0x8000u));
  }
}
template <class F> float timeit(F f, int reps = 25) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> t;
  for (int i = 0; i < 3; ++i) f(i);
  for (int i = 0; i < reps; ++i) { cudaEventRecord(a); f(i); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000); }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
int main(int argc, char** argv) {
  const u32 M = argc > 1 ? atoi(argv[1]) : 16384, K = argc > 2 ? atoi(argv[2]) : 16384;
  const size_t n = size_t(M) * K;
  const int NB = 3;
  uint16_t* in[NB]; for (int i = 0; i < NB; ++i) { CK(cudaMalloc(&in[i], n * 2)); fill<<<1024, 256>>>(in[i], n, 77u + i); }
  uint8_t *o0, *o1, *s0, *s1; CK(cudaMalloc(&o0, n)); CK(cudaMalloc(&o1, n)); CK(cudaMalloc(&s0, n / 32)); CK(cudaMalloc(&s1, n / 32));
  void* cp; CK(cudaMalloc(&cp, size_t(2) << 30));
  float tc = timeit([&](int i) { cudaMemcpyAsync(cp, (char*)cp + (size_t(1) << 30), size_t(1) << 30, cudaMemcpyDeviceToDevice); });
  const double copy = 2.0 * (size_t(1) << 30) / tc / 1e3;
  printf("copy %.0f GB/s  (M=%u K=%u)\n", copy, M, K);
  auto rep = [&](const char* name, float us, double bytes) { double gb = bytes / us / 1e3; printf("%-28s %8.1f us %7.0f GB/s %5.1f%%\n", name, us, gb, 100 * gb / copy); };
  const double b1 = n * 3.0 + n / 32.0, b2 = n * 4.0 + n / 16.0;
  rep("dim0_A R=1", timeit([&](int i) { dim0_A<1><<<dim3((K / 32 + 255) / 256, M / 1), 256>>>((const uint4*)in[i % NB], (uint4*)o0, s0, M, K); }), b1);
  rep("dim0_A R=2", timeit([&](int i) { dim0_A<2><<<dim3((K / 32 + 255) / 256, M / 2), 256>>>((const uint4*)in[i % NB], (uint4*)o0, s0, M, K); }), b1);
  rep("dim0_B R=2", timeit([&](int i) { dim0_B<2><<<dim3((K / 8 + 255) / 256, M / 2), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_B R=4", timeit([&](int i) { dim0_B<4><<<dim3((K / 8 + 255) / 256, M / 4), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_B R=8", timeit([&](int i) { dim0_B<8><<<dim3((K / 8 + 255) / 256, M / 8), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_S R=2 linear", timeit([&](int i) { dim0_S<2, 0><<<dim3((K / 8 + 255) / 256, M / 2), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_S R=2 blocked", timeit([&](int i) { dim0_S<2, 1><<<dim3((K / 8 + 255) / 256, M / 2), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_S R=2 blocked math", timeit([&](int i) { dim0_S<2, 2><<<dim3((K / 8 + 255) / 256, M / 2), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_S R=1 linear", timeit([&](int i) { dim0_S<1, 0><<<dim3((K / 8 + 255) / 256, M / 1), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_S R=1 blocked", timeit([&](int i) { dim0_S<1, 1><<<dim3((K / 8 + 255) / 256, M / 1), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  rep("dim0_S R=1 blocked math", timeit([&](int i) { dim0_S<1, 2><<<dim3((K / 8 + 255) / 256, M / 1), 256>>>((const uint4*)in[i % NB], (uint2*)o0, s0, M, K); }), b1);
  if (argc > 3) return 0;  // dim0 only
  rep("dim1_C W=2", timeit([&](int i) { dim1_C<2><<<dim3((K / 2 + 255) / 256, M / 32), 256>>>(in[i % NB], o1, s1, M, K); }), b1);
  rep("dim1_C W=4", timeit([&](int i) { dim1_C<4><<<dim3((K / 4 + 255) / 256, M / 32), 256>>>(in[i % NB], o1, s1, M, K); }), b1);
  rep("dim1_C W=8", timeit([&](int i) { dim1_C<8><<<dim3((K / 8 + 255) / 256, M / 32), 256>>>(in[i % NB], o1, s1, M, K); }), b1);
  rep("fused_F", timeit([&](int i) { fused_F<<<dim3((K / 4 + 255) / 256, M / 32), 256>>>(in[i % NB], o0, s0, o1, s1, M, K); }), b2);

#define G(RG, MODE, SWAP, NAME) rep(NAME, timeit([&](int i) { dim3 g((K / (8 * (32 / RG) * 4)), M / (32 * RG)); if (SWAP) std::swap(g.x, g.y); \
    dim1_G<RG, MODE, SWAP><<<g, 256>>>(in[i % NB], o1, s1, M, K); }), MODE == 0 ? b1 : (MODE == 1 ? n + n / 32.0 : 2.0 * n))
  G(1, 0, false, "dim1_G RG=1");
  G(1, 0, true, "dim1_G RG=1 swap");
  G(2, 0, false, "dim1_G RG=2");
  G(4, 0, false, "dim1_G RG=4");
  G(4, 0, true, "dim1_G RG=4 swap");
  G(8, 0, false, "dim1_G RG=8");
  G(8, 0, true, "dim1_G RG=8 swap");
  G(4, 1, false, "dim1_G RG=4 write-only");
  G(4, 2, false, "dim1_G RG=4 read-only");
  G(1, 1, false, "dim1_G RG=1 write-only");
  G(1, 2, false, "dim1_G RG=1 read-only");

#define H(MODE, FUSED, SWAP, NAME, MB) rep(NAME, timeit([&](int i) { dim3 g(M / 128, K / 256); if (!SWAP) std::swap(g.x, g.y); \
    dim1_H<MODE, FUSED, MB><<<g, 256>>>(in[i % NB], o1, s1, o0, s0, M, K); }), FUSED ? b2 : (MODE == 0 ? b1 : (MODE == 1 ? n + n / 32.0 : 2.0 * n)))
  H(0, false, true, "dim1_H mb1", 1);
  H(0, false, true, "dim1_H mb2", 2);
  H(0, false, true, "dim1_H mb3", 3);
  H(0, false, true, "dim1_H mb4", 4);
  H(1, false, true, "dim1_H write-only", 1);
  H(2, false, true, "dim1_H read-only", 1);
  H(0, true, true, "fused_H mb1", 1);
  H(0, true, true, "fused_H mb2", 2);
  H(0, true, true, "fused_H mb3", 3);
  return 0;
}
