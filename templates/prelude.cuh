// mxjit prelude: fixed-width types, bit casts, loads and stores. Every generated kernel includes
// it by name (NVRTC gets templates/*.cuh as named headers; generated code includes nothing else,
// so NVRTC reads no system header).
typedef unsigned char mx_u8;
typedef unsigned short mx_u16;
typedef unsigned int mx_u32;
typedef unsigned long long mx_u64;
typedef long long mx_i64;

#ifndef MX_HD
#define MX_HD __host__ __device__ __forceinline__
#endif
#define MX_D __device__ __forceinline__

MX_D mx_u32 mx_bits(float f) { return __float_as_uint(f); }
MX_D float mx_float(mx_u32 u) { return __uint_as_float(u); }

// 16-byte vector loads/stores (the caller proves alignment).
struct mx_v16 { mx_u32 x, y, z, w; };
MX_D mx_v16 mx_ld16(const void* p) {
  mx_v16 v;
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
// The same with the L2 asked to fetch the load's whole 256-byte block (`.L2::256B`), for the
// columns kernel, whose warps read a 2-D tile a few lines at a time (docs/perf-log.md#ld16-l2-256b).
// Every target is sm_80 or newer.
MX_D mx_v16 mx_ld16_l2(const void* p) {
  mx_v16 v;
  asm volatile("ld.global.nc.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
MX_D void mx_st16(void* p, mx_v16 v) {
  asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
MX_D bool mx_aligned16(const void* p) { return (reinterpret_cast<mx_u64>(p) & 15ull) == 0; }

// A 4 x 4 byte transpose: word k of the result holds byte k of a, b, c and d, in that order.
// Blocked scales' atom lines, grouped rows' words and transposed codes all gather 4 words of 4
// bytes this way (6 byte permutes):
//
//   a = [a0 a1 a2 a3]        x = [a0 b0 c0 d0]
//   b = [b0 b1 b2 b3]   ->   y = [a1 b1 c1 d1]
//   c = [c0 c1 c2 c3]        z = [a2 b2 c2 d2]
//   d = [d0 d1 d2 d3]        w = [a3 b3 c3 d3]
MX_D mx_v16 mx_transpose4x4(mx_u32 a, mx_u32 b, mx_u32 c, mx_u32 d) {
  const mx_u32 ab0 = __byte_perm(a, b, 0x5140u), ab1 = __byte_perm(a, b, 0x7362u);  // [a0 b0 a1 b1], [a2 b2 a3 b3]
  const mx_u32 cd0 = __byte_perm(c, d, 0x5140u), cd1 = __byte_perm(c, d, 0x7362u);
  return mx_v16{__byte_perm(ab0, cd0, 0x5410u), __byte_perm(ab0, cd0, 0x7632u), __byte_perm(ab1, cd1, 0x5410u),
                __byte_perm(ab1, cd1, 0x7632u)};
}

#if __CUDA_ARCH__ >= 800
// Asynchronous 16-byte copies global -> shared (sm_80+): loads in flight without registers.
// `bytes` (0..16) are read from `src` (16-byte aligned) and the rest of the 16 zero-filled, so a
// tile's tail reads as +0 bits; with 0 bytes nothing is read (src then only needs to be a valid
// pointer). Copies complete in commit groups: wait<N> returns once at most N of this thread's
// groups are pending; a thread that reads back only its own copies needs no barrier.
MX_D void mx_cp_async16(void* dst, const void* src, unsigned bytes) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(bytes) : "memory");
}
MX_D void mx_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
MX_D void mx_cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
#endif

#if __CUDA_ARCH__ >= 900
// Bulk copies global -> shared (sm_90+, the TMA engine): one instruction moves `bytes` (a
// multiple of 16, both addresses 16-byte aligned) and, when they have landed, completes that
// many bytes of transaction on mbarrier `bar`. A warp waits for a phase of the barrier by its
// parity; `expect` arrives once and announces the bytes the phase's copies will bring (0: the
// phase completes at this arrival, with nothing copied).
MX_D unsigned mx_smem_addr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
MX_D void mx_mbar_init(mx_u64* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mx_smem_addr(bar)), "r"(arrivals) : "memory");
}
// After the barriers' init, before any thread or copy uses them (then a CTA barrier).
MX_D void mx_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory"); }
MX_D void mx_mbar_expect(mx_u64* bar, unsigned bytes) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(mx_smem_addr(bar)), "r"(bytes)
               : "memory");
}
MX_D void mx_mbar_wait(mx_u64* bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(mx_smem_addr(bar)), "r"(parity) : "memory");
}
MX_D void mx_bulk_load(void* dst, const void* src, unsigned bytes, mx_u64* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(mx_smem_addr(dst)), "l"(src), "r"(bytes), "r"(mx_smem_addr(bar)) : "memory");
}
// Bulk copies shared -> global: the writers of the shared bytes fence (generic -> async proxy)
// before the CTA barrier that precedes the copy; the issuing thread commits its copies as a group
// and, before the CTA exits or reuses the bytes, waits until the group has read them.
MX_D void mx_bulk_fence() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
MX_D void mx_bulk_store(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(mx_smem_addr(src)), "r"(bytes) : "memory");
}
MX_D void mx_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
MX_D void mx_bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
#endif

// Scalar element loads, widened to FP32 exactly.
MX_D float mx_ld_bf16(const void* p, mx_i64 i) { return mx_bf16_to_f32(static_cast<const mx_u16*>(p)[i]); }
MX_D float mx_ld_f16(const void* p, mx_i64 i) { return mx_f16_to_f32(static_cast<const mx_u16*>(p)[i]); }
MX_D float mx_ld_f32(const void* p, mx_i64 i) { return static_cast<const float*>(p)[i]; }
MX_D mx_u8 mx_ld_u8(const void* p, mx_i64 i) { return static_cast<const mx_u8*>(p)[i]; }

// Unpack 16 loaded bytes into FP32 lanes.
MX_D void mx_unpack_bf16x8(mx_v16 v, float* o) {
  mx_u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) { o[2*i] = mx_float(w[i] << 16); o[2*i+1] = mx_float(w[i] & 0xffff0000u); }
}
MX_D void mx_unpack_f16x8(mx_v16 v, float* o) {
  mx_u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) { o[2*i] = mx_f16_to_f32(w[i] & 0xffffu); o[2*i+1] = mx_f16_to_f32(w[i] >> 16); }
}
MX_D void mx_unpack_f32x4(mx_v16 v, float* o) {
  o[0] = mx_float(v.x); o[1] = mx_float(v.y); o[2] = mx_float(v.z); o[3] = mx_float(v.w);
}

// Lane-wise max of two pairs of non-negative 16-bit floats (|x|: sign bits cleared by the caller),
// two elements per instruction; NaN-propagating (a NaN lane gives the canonical 0x7fff, which
// widens to an FP32 NaN: its block is a NaN block, as with the FP32 bit maximum).
MX_D mx_u32 mx_max_bf16x2(mx_u32 a, mx_u32 b) {
  mx_u32 d;
  asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
MX_D mx_u32 mx_umax(mx_u32 a, mx_u32 b) { return a > b ? a : b; }
MX_D mx_u32 mx_max_f16x2(mx_u32 a, mx_u32 b) {
  mx_u32 d;
  asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// The same, NaN-skipping (max without .NaN: a NaN lane gives the other lane's value, two NaN
// lanes the canonical NaN): an amax that ignores NaN drops the NaN lanes once, after the tree.
MX_D mx_u32 mx_max_bf16x2_num(mx_u32 a, mx_u32 b) {
  mx_u32 d;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
MX_D mx_u32 mx_max_f16x2_num(mx_u32 a, mx_u32 b) {
  mx_u32 d;
  asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Block-wide max of non-negative float bit patterns (|x| orders like its bits; NaN is largest).
MX_D mx_u32 mx_warp_max_u32(mx_u32 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) { mx_u32 w = __shfl_xor_sync(0xffffffffu, v, o); v = v > w ? v : w; }
  return v;
}

// Publishes this thread's max |x| bit pattern m to the tensor amax *dst: the block's max by
// shuffles and shared memory, then one atomicMax per block, skipped where *dst (read from L2,
// where the atomics happen) already holds as much (one atomic per warp on one word serialises in
// L2: docs/perf-log.md#amax-publish). Every thread of the (1-D) block calls it.
MX_D void mx_block_amax_publish(mx_u32* dst, mx_u32 m) {
  __shared__ mx_u32 red[32];
  if (m > 0x7f800000u) m = 0x7fc00000u;
  m = mx_warp_max_u32(m);
  const unsigned w = threadIdx.x >> 5;
  __syncthreads();  // a previous call's readers are done with red
  if ((threadIdx.x & 31u) == 0u) red[w] = m;
  __syncthreads();
  if (w == 0u) {
    m = threadIdx.x < (blockDim.x + 31u) >> 5 ? red[threadIdx.x] : 0u;
    m = mx_warp_max_u32(m);
    if (threadIdx.x == 0u && m != 0u && m > __ldcg(dst)) atomicMax(dst, m);
  }
}

// Word 0 of Philox4x32-10 for counter {i_lo, i_hi, offset_lo, offset_hi}, key {seed_lo, seed_hi}.
MX_D mx_u32 mx_philox_word0(mx_u64 i, mx_u64 offset, mx_u64 seed) {
  unsigned ctr[4] = {unsigned(i), unsigned(i >> 32), unsigned(offset), unsigned(offset >> 32)};
  unsigned key[2] = {unsigned(seed), unsigned(seed >> 32)};
  unsigned out[4];
  mx_philox4x32_10(ctr, key, out);
  return out[0];
}

#if __CUDA_ARCH__ >= 900
// Thread-block clusters (sm_90+; the jagged kernel with JaggedPlan::cluster > 1). Every thread of every
// CTA of the cluster calls the barrier's two halves. The arrive is relaxed: the barrier orders only
// the transaction barriers' init (mx_mbar_init_fence) before the st.async that target them. (A
// release arrive waits for the thread's outstanding memory operations, a MEMBAR.ALL.GPU + ERRBAR
// that ncu showed stalling the jagged kernel; docs/perf-log.md, tenth session.)
MX_D void mx_cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
MX_D void mx_cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// The launch's cluster size and this CTA's rank in it.
MX_D unsigned mx_cluster_size() {
  unsigned n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
MX_D unsigned mx_cluster_rank() {
  unsigned r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// The address of `p` (this CTA's shared memory) in the shared memory of cluster rank `rank`.
MX_D unsigned mx_cluster_addr(const void* p, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(unsigned(__cvta_generic_to_shared(p))), "r"(rank));
  return remote;
}
// Values sent between a cluster's CTAs without a cluster-wide barrier (whose release arrive costs
// a MEMBAR.ALL.GPU; docs/perf-log.md#cluster-st-async): each receiver counts the bytes on its own
// transaction barrier (mx_mbar_*, below) and waits for that alone.
//
//   CTA q:  mx_mbar_init(bar, 1); mx_mbar_init_fence(); cluster arrive (relaxed)
//           ... cluster wait ...                    every barrier initialised before any st.async
//           expect(bar, K x bytes); st.async v -> rank j's slot[q], completing bytes on j's bar
//           mx_mbar_wait_cluster(bar, 0): slot[0 .. K-1] hold the K CTAs' values
// v into `slot` (this CTA's shared memory) of cluster rank `rank`, completing 4 bytes on that rank's `bar`.
MX_D void mx_st_async_u32(mx_u32* slot, unsigned rank, mx_u32 v, mx_u64* bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(mx_cluster_addr(slot, rank)),
      "r"(v), "r"(mx_cluster_addr(bar, rank))
      : "memory");
}
// mx_mbar_wait at cluster scope: the bytes other CTAs sent are visible after it.
MX_D void mx_mbar_wait_cluster(mx_u64* bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(mx_smem_addr(bar)), "r"(parity)
        : "memory");
}
#endif

// Offset of scale (r, c) of batch b in a blocked layout of AR x AC atoms (DESIGN §5):
//   ((r/AR)*(Cp/AC) + c/AC)*AR*AC + (r%L)*(AC*AR/L) + ((r%AR)/L)*AC + c%AC + b*Rp*Cp, L = min(AR, 32)
template <int AR, int AC>
MX_D unsigned mx_blocked_offset32(unsigned r, unsigned c, unsigned cp) {
  constexpr unsigned L = AR >= 32 ? 32 : AR;
  return ((r / AR) * (cp / AC) + c / AC) * (AR * AC) + (r % L) * (AC * (AR / L)) + ((r % AR) / L) * AC + c % AC;
}
// The same with the batch term. In-batch offsets are 32-bit: the launcher refuses blocked scale
// tensors of 4 GiB or more.
template <int AR, int AC>
MX_D mx_i64 mx_blocked_offset(mx_i64 b, mx_i64 r, mx_i64 c, mx_i64 rp, mx_i64 cp) {
  return b * rp * cp + mx_i64(mx_blocked_offset32<AR, AC>(unsigned(r), unsigned(c), unsigned(cp)));
}
