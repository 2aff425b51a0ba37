// mxjit conversions: E8M0 scale rules with integer bit operations, and element encoders.
// The software encoders serve every format on every arch (FP6/FP4/INT8 on sm_90: mx_encode_rne;
// stochastic rounding everywhere: mx_encode_sw); hardware cvt wrappers are used where the arch
// has them.

// ---- E8M0 scale rules (DESIGN §4). a = |amax| bit pattern, sign clear, not NaN/Inf/0. -------
// floor(log2(a)) exactly, subnormal a included.
MX_D int mx_floor_log2_bits(mx_u32 a) {
  return a >= 0x00800000u ? int(a >> 23) - 127 : (31 - __clz(a)) - 149;
}
MX_D int mx_ceil_log2_bits(mx_u32 a) {
  int e = mx_floor_log2_bits(a);
  bool pow2 = a >= 0x00800000u ? (a & 0x7fffffu) == 0 : (a & (a - 1)) == 0;
  return pow2 ? e : e + 1;
}
MX_D mx_u32 mx_clamp_biased(int e) { e += 127; return mx_u32(e < 0 ? 0 : (e > 254 ? 254 : e)); }

// FLOOR: floor(log2(amax)) - emax. With emax >= 0 (every built-in format) the biased exponent
// field minus emax is it: a subnormal amax (field 0, floor(log2) <= -127) gives byte 0 either way.
MX_D mx_u32 mx_scale_floor(mx_u32 a, int emax) {
  if (emax < 0) return mx_clamp_biased(mx_floor_log2_bits(a) - emax);
  const int b = int(a >> 23) - emax;
  return mx_u32(b < 0 ? 0 : (b > 254 ? 254 : b));
}
// CEIL: ceil(log2(amax)) - floor(log2(max_normal)).
MX_D mx_u32 mx_scale_ceil(mx_u32 a, int max_log2) { return mx_clamp_biased(mx_ceil_log2_bits(a) - max_log2); }
// EVEN: RNE-round away the low (23 - mbits) bits of the pattern (carry may bump the exponent),
// then FLOOR. A tie goes to the even significand: its last kept bit, or with mbits 0 its integer
// bit (1 for a normal: the tie rounds up; 0 for a subnormal), not the exponent's last bit.
MX_D mx_u32 mx_scale_even(mx_u32 a, int mbits, int emax) {
  int sh = 23 - mbits;
  mx_u32 low = a & ((1u << sh) - 1u), half = 1u << (sh - 1);
  mx_u32 r = a >> sh;
  const mx_u32 odd = mbits > 0 ? (r & 1u) : mx_u32(r != 0u);
  if (low > half || (low == half && odd)) r += 1u;
  return mx_clamp_biased(mx_floor_log2_bits(r << sh) - emax);
}
// RCEIL: round amax * (1/max_normal) up to a power of two (cvt.rp.satfinite.ue8m0x2.f32).
MX_D mx_u32 mx_scale_rceil(mx_u32 a, float rcp_max) {
  mx_u32 v = mx_bits(mx_float(a) * rcp_max);
#if MXJIT_HW_UE8M0
  mx_u16 d;
  float f = mx_float(v);
  asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(d) : "f"(f), "f"(f));
  return d & 0xffu;
#else
  // Branch-free: adding 0x7fffff carries into the exponent field exactly when the mantissa is
  // non-zero (ceil for normal v); subnormal v <= 2^-127 gives byte 0, larger ones byte 1.
  const mx_u32 b = (v + 0x7fffffu) >> 23;
  return v <= 0x400000u ? 0u : (b > 254u ? 254u : b);
#endif
}
// floor/ceil(log2(x)) as FP32 for user scale expressions (x<0 or NaN: NaN, 0: -Inf, Inf: Inf).
MX_D float mx_floor_log2f(float x) {
  mx_u32 u = mx_bits(x);
  if (x != x || (u >> 31)) return x == 0.0f ? mx_float(0xff800000u) : mx_float(0x7fc00000u);
  if (u == 0u) return mx_float(0xff800000u);
  if (u == 0x7f800000u) return x;
  return float(mx_floor_log2_bits(u));
}
MX_D float mx_ceil_log2f(float x) {
  mx_u32 u = mx_bits(x);
  if (x != x || (u >> 31)) return x == 0.0f ? mx_float(0xff800000u) : mx_float(0x7fc00000u);
  if (u == 0u) return mx_float(0xff800000u);
  if (u == 0x7f800000u) return x;
  return float(mx_ceil_log2_bits(u));
}
// A user expression's exponent (rounded toward -inf) to a biased byte; NaN -> 0xFF.
MX_D mx_u32 mx_custom_exponent_byte(float e) {
  if (e != e) return 255u;
  if (e <= -127.0f) return 0u;
  if (e >= 127.0f) return 254u;
  int i = int(e);  // truncates toward zero; step down for negative non-integers
  if (float(i) > e) i -= 1;
  return mx_u32(i + 127);
}

// ---- Element encoders ----------------------------------------------------------------------
// Software encoder for any (EB, MB) format (SPEC 0 none / 1 fn / 2 ieee; ISINT for MXINT8),
// round to nearest even (SR=false) or stochastically with 32 random bits rnd. Kernels call it for
// stochastic rounding; its RNE path is the reference mx_encode_rne is tested against.
template <int EB, int MB, int SPEC, bool ISINT>
MX_D mx_u32 mx_encode_sw(float v, bool sr, mx_u32 rnd) {
  mx_u32 u = mx_bits(v), sign = u >> 31;
  u &= 0x7fffffffu;
  constexpr int kBits = ISINT ? 8 : 1 + EB + MB;
  if (u > 0x7f800000u) return SPEC == 0 ? 0u : (1u << (kBits - 1)) - 1u;  // NaN: S=0, all ones
  constexpr int kBias = ISINT ? 0 : (1 << (EB - 1)) - 1;
  constexpr int kEmin = 1 - kBias;
  constexpr mx_u32 kMaxField = ISINT ? 0u : (SPEC == 2 ? (1u << EB) - 2u : (1u << EB) - 1u);
  constexpr mx_u32 kMaxMant = ISINT ? 127u : (SPEC == 1 ? (1u << MB) - 2u : (1u << MB) - 1u);
  constexpr mx_u32 kMaxCode = ISINT ? 127u : ((kMaxField << MB) | kMaxMant);
  mx_u32 mag;
  if (u == 0x7f800000u) {
    mag = kMaxCode;  // satfinite
  } else {
    int e = u >= 0x00800000u ? int(u >> 23) - 127 : -126;
    mx_u64 m = u >= 0x00800000u ? ((u & 0x7fffffu) | 0x800000u) : u;
    int te = ISINT ? 0 : (e > kEmin ? e : kEmin);
    int q = ISINT ? -MB : te - MB;  // exponent of one quantum
    int d = q - (e - 23);           // bits to drop
    mx_u64 k;
    if (d <= 0) {
      k = d < -40 ? (1ull << 40) : (m << (-d));
    } else if (d >= 64) {
      k = 0;
      if (sr) { /* frac * 2^32 < 1 */ }
    } else {
      k = m >> d;
      mx_u64 rem = m & ((1ull << d) - 1ull);
      if (sr) {
        mx_u64 frac32 = d <= 32 ? (rem << (32 - d)) : (rem >> (d - 32));
        if (mx_u64(rnd) < frac32) k += 1;
      } else {
        mx_u64 half = 1ull << (d - 1);
        if (rem > half || (rem == half && (k & 1ull))) k += 1;
      }
    }
    if (ISINT) {
      mag = k > 127ull ? 127u : mx_u32(k);
      return sign && mag ? (256u - mag) & 0xffu : mag;
    }
    if (k < (1ull << MB)) {
      mag = mx_u32(k);  // subnormal (te == emin)
    } else {
      int field = te + kBias;
      if (k >= (2ull << MB)) { k >>= 1; field += 1; }
      mx_u32 mant = mx_u32(k - (1ull << MB));
      if (field > int(kMaxField) || (field == int(kMaxField) && mant > kMaxMant)) mag = kMaxCode;
      else mag = (mx_u32(field) << MB) | mant;
    }
  }
  if (ISINT) return sign && mag ? (256u - mag) & 0xffu : mag;
  return (sign << (kBits - 1)) | mag;
}

// Branch-free round-to-nearest-even encoder, bit-identical to mx_encode_sw(v, false, 0u) for
// every FP32 input (tests/codegen/test_encoders.cpp): the non-stochastic software encode. No
// 64-bit arithmetic: below the smallest normal 2^emin the FPU rounds (a + C, C = 2^(emin-MB+23),
// whose ulp is one quantum: the code is bits(a + C) - bits(C), 2^MB where it rounds up to
// 2^emin); above it the FP32 pattern is rounded to MB mantissa bits by an integer add and
// rebiased. Saturation (Inf included) is an unsigned min, NaN a select.
template <int EB, int MB, int SPEC, bool ISINT>
MX_D mx_u32 mx_encode_rne(float v) {
  constexpr int kBits = ISINT ? 8 : 1 + EB + MB;
  constexpr int kBias = ISINT ? 0 : (1 << (EB - 1)) - 1;
  constexpr int kEmin = ISINT ? 0 : 1 - kBias;  // MXINT8: quantum 2^-MB, as if all subnormal
  constexpr mx_u32 kMaxField = ISINT ? 0u : (SPEC == 2 ? (1u << EB) - 2u : (1u << EB) - 1u);
  constexpr mx_u32 kMaxMant = ISINT ? 127u : (SPEC == 1 ? (1u << MB) - 2u : (1u << MB) - 1u);
  constexpr mx_u32 kMaxCode = ISINT ? 127u : ((kMaxField << MB) | kMaxMant);
  constexpr mx_u32 kMagic = mx_u32(127 + kEmin - MB + 23) << 23;  // C's bits
  constexpr int kDrop = 23 - MB;
  const mx_u32 u = mx_bits(v), a = u & 0x7fffffffu;
  const bool is_nan = a > 0x7f800000u;
  if (ISINT) {
    // |v| (NaN and Inf too) clamped to 4.0 keeps a + C below 2^18; 4.0 gives 256, saturated.
    const mx_u32 k = mx_bits(mx_fadd(mx_float(a < 0x40800000u ? a : 0x40800000u), mx_float(kMagic))) - kMagic;
    const mx_u32 mag = k < kMaxCode ? k : kMaxCode;
    return is_nan ? 0u : ((u >> 31) ? (0u - mag) & 0xffu : mag);  // two's complement; -0 -> 0
  }
  const mx_u32 sub = mx_bits(mx_fadd(mx_float(a), mx_float(kMagic))) - kMagic;
  const mx_u32 nrm = ((a + ((1u << (kDrop - 1)) - 1u) + ((a >> kDrop) & 1u)) >> kDrop) - (mx_u32(127 - kBias) << MB);
  mx_u32 mag = a < (mx_u32(127 + kEmin) << 23) ? sub : nrm;
  mag = mag < kMaxCode ? mag : kMaxCode;
  const mx_u32 code = ((u >> (32 - kBits)) & (1u << (kBits - 1))) | mag;
  return is_nan ? (SPEC == 0 ? 0u : (1u << (kBits - 1)) - 1u) : code;  // NaN: S=0, all ones
}

// Two MXINT8 codes (lo -> low byte) for lanes known not to be NaN, or overwritten when NaN (E8M0
// NaN blocks): y clamped to +-127/64, then y * 64 + 1.5 * 2^23 rounds y * 64 to nearest-even in
// the FP32 adder with the integer in the low mantissa bits, whose low byte is its two's
// complement (-0 gives 0). Bit-identical to mx_encode_rne<1, 6, 0, true> on non-NaN inputs, with
// three FP32 operations per code instead of its integer sequence.
MX_D mx_u32 mx_int8x2_finite(float lo, float hi) {
  const float a = fmaf(fminf(fmaxf(lo, -1.984375f), 1.984375f), 64.0f, 12582912.0f);
  const float b = fmaf(fminf(fmaxf(hi, -1.984375f), 1.984375f), 64.0f, 12582912.0f);
  return (mx_bits(a) & 0xffu) | ((mx_bits(b) & 0xffu) << 8);
}

#if MXJIT_HW_FP8
// Hardware FP8 pair conversions (sm_89+): lo -> low byte, hi -> high byte; RNE, satfinite.
MX_D mx_u32 mx_cvt_e4m3x2(float lo, float hi) {
  mx_u16 d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}
MX_D mx_u32 mx_cvt_e5m2x2(float lo, float hi) {
  mx_u16 d;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}
#endif
// |x| words of two bf16 (add 0x007f007f) or f16 (0x03ff03ff), NaN lanes made +0 (an amax that
// ignores NaN, as CUDA's fmaxf): with the sign bits clear, adding `add` carries into a lane's sign
// bit exactly when the lane is above Inf (bf16 0x7f80, f16 0x7c00), and never into the next lane.
MX_D mx_u32 mx_drop_nan2(mx_u32 a, mx_u32 add) {
  const mx_u32 n = (a + add) & 0x80008000u;
  return a & ~((n >> 15) * 0xffffu);
}
// Saturate::none (torch's `.to(float8_*)`): `code`, the saturating RNE code of y, where y rounds
// within the format; where it rounds beyond the largest normal on the grid extended by one step
// (E4M3: |y| > 464, the tie 464 going to the even 448; E5M2: |y| >= 61440, the tie going to the
// odd top code's successor) or is infinite, NaN with y's sign (E4M3: 0x7F | s) or Inf (E5M2:
// 0x7C | s), as reference::encode_rne(elem, y, Saturate::none). NaN keeps its code (0x7F).
template <bool E5M2>
MX_D mx_u32 mx_fp8_nosat(float y, mx_u32 code) {
  const mx_u32 a = mx_bits(y) & 0x7fffffffu, s = (mx_bits(y) >> 24) & 0x80u;
  const bool over = a <= 0x7f800000u && (E5M2 ? a >= 0x47700000u : a > 0x43e80000u);
  return over ? (s | (E5M2 ? 0x7cu : 0x7fu)) : code;
}
// True when no y[e] lies past the non-saturating overflow bound (E4M3: |y| > 464, E5M2: |y| >=
// 61440, +-Inf included), where mx_fp8_nosat is the identity: the satfinite codes are then the
// non-saturating ones. NaN lanes (kept by both) are skipped by fmaxf; an all-NaN chunk fails.
template <bool E5M2, int N>
MX_D bool mx_fp8_no_overflow(const float (&y)[N]) {
  float m = fabsf(y[0]);
#pragma unroll
  for (int e = 1; e < N; ++e) m = fmaxf(m, fabsf(y[e]));
  return E5M2 ? m < 61440.0f : m <= 464.0f;
}
#if MXJIT_HW_FP8
// The hardware pairs with Saturate::none: the satfinite cvt, then mx_fp8_nosat per lane.
MX_D mx_u32 mx_cvt_e4m3x2_nosat(float lo, float hi) {
  const mx_u32 c = mx_cvt_e4m3x2(lo, hi);
  return mx_fp8_nosat<false>(lo, c & 0xffu) | (mx_fp8_nosat<false>(hi, c >> 8) << 8);
}
MX_D mx_u32 mx_cvt_e5m2x2_nosat(float lo, float hi) {
  const mx_u32 c = mx_cvt_e5m2x2(lo, hi);
  return mx_fp8_nosat<true>(lo, c & 0xffu) | (mx_fp8_nosat<true>(hi, c >> 8) << 8);
}
#endif
// FP8 pairs by the hardware where there is one, else by the software encoder (bit-identical;
// the host tests compile this branch): what the FP6 encoders below build on.
MX_D mx_u32 mx_e4m3x2_rne(float lo, float hi) {
#if MXJIT_HW_FP8
  return mx_cvt_e4m3x2(lo, hi);
#else
  return mx_encode_rne<4, 3, 1, false>(lo) | (mx_encode_rne<4, 3, 1, false>(hi) << 8);
#endif
}
// One value to an E4M3 code, RNE with saturation (NVFP4 block scales).
MX_D mx_u32 mx_e4m3_rne(float v) { return mx_e4m3x2_rne(v, 0.0f) & 0xffu; }
MX_D mx_u32 mx_e5m2x2_rne(float lo, float hi) {
#if MXJIT_HW_FP8
  return mx_cvt_e5m2x2(lo, hi);
#else
  return mx_encode_rne<5, 2, 2, false>(lo) | (mx_encode_rne<5, 2, 2, false>(hi) << 8);
#endif
}

// FP6 pairs through the FP8 conversion (sm_89/sm_90 have none for FP6), bit-identical to
// mx_encode_rne. E2M3 shares E4M3's 3 mantissa bits and its grid is E4M3's times 2^6 (normal
// from 2^0 vs 2^-6, subnormal quantum 2^-3 vs 2^-9); E3M2 is E5M2's times 2^12. So for
// |y| <= max, RNE of y is the FP8 cvt of y * 2^-k (exact, or below 2^-126 where both give +-0),
// and since the exponent fields agree (e + 1 = (e - 6) + 7, e + 3 = (e - 12) + 15) the FP6 code
// is the FP8 code with its sign moved from bit 7 to bit 5:
//
//   E4M3  s eeee mmm   (field <= 3)  ->  E2M3  s ee mmm
//   E5M2  s eeeee mm   (field <= 7)  ->  E3M2  s eee mm
//
// Clamping to +-max first is satfinite (Inf included); NaN (none in FP6) -> 0. The _finite
// forms leave NaN lanes undefined, for callers that overwrite them (E8M0 NaN blocks).
template <bool E3M2, bool NAN_CHECK>
MX_D mx_u32 mx_fp6x2_via_fp8(float lo, float hi) {
  const float kMax = E3M2 ? 28.0f : 7.5f, kDown = E3M2 ? 0.000244140625f : 0.015625f;
  const float l = fminf(fmaxf(lo, -kMax), kMax) * kDown, h = fminf(fmaxf(hi, -kMax), kMax) * kDown;
  mx_u32 d = E3M2 ? mx_e5m2x2_rne(l, h) : mx_e4m3x2_rne(l, h);
  d = (d & 0x1f1fu) | ((d >> 2) & 0x2020u);
  if (NAN_CHECK && lo != lo) d &= 0xff00u;
  if (NAN_CHECK && hi != hi) d &= 0x00ffu;
  return d;
}
MX_D mx_u32 mx_e2m3x2_via_e4m3(float lo, float hi) { return mx_fp6x2_via_fp8<false, true>(lo, hi); }
MX_D mx_u32 mx_e3m2x2_via_e5m2(float lo, float hi) { return mx_fp6x2_via_fp8<true, true>(lo, hi); }
MX_D mx_u32 mx_e2m3x2_via_e4m3_finite(float lo, float hi) { return mx_fp6x2_via_fp8<false, false>(lo, hi); }
MX_D mx_u32 mx_e3m2x2_via_e5m2_finite(float lo, float hi) { return mx_fp6x2_via_fp8<true, false>(lo, hi); }

// E2M1 by two FMAs, bit-identical to mx_encode_rne<2, 1, 0, false>. a = min(|v|, 6) (satfinite)
// lies in [c, 2c) for c = 2^max(e, 0); a + c * 2^22 falls in [2^(e+22), 2^(e+23)), whose ulp
// 2^(e-1) is E2M1's quantum there (0.5 below 2, then 1, then 2), so the FMA rounds a to
// nearest-even on E2M1's grid and the second FMA takes c * 2^22 back off exactly. The rounded r
// times 2^-126 is an FP32 pattern whose bits 22..24 are the E2M1 magnitude (0.5 -> 2^-127, the
// subnormal 0x00400000 -> 1; 6 -> 1.5 * 2^-124 -> 7). Needs FP32 subnormals (no FTZ).
// mx_e2m1_mag_bits gives that pattern (zero outside bits 22..24; NaN not handled).
MX_D mx_u32 mx_e2m1_mag_bits(float v) {
  const float a = fminf(fabsf(v), 6.0f);
  const float c = mx_float(mx_bits(fmaxf(a, 1.0f)) & 0x7f800000u);
  const float r = fmaf(c, -4194304.0f, fmaf(c, 4194304.0f, a));
  return mx_bits(r * 1.17549435e-38f);
}
MX_D mx_u32 mx_e2m1_rne_fma(float v) {
  const mx_u32 code = (mx_e2m1_mag_bits(v) >> 22) | ((mx_bits(v) >> 28) & 8u);
  return v != v ? 0u : code;
}
// Two E2M1 codes: lo in the low nibble (the layout of cvt.rn.satfinite.e2m1x2).
MX_D mx_u32 mx_e2m1x2_fma(float lo, float hi) { return mx_e2m1_rne_fma(lo) | (mx_e2m1_rne_fma(hi) << 4); }
// The same for lanes known not to be NaN, or overwritten when NaN (E8M0 NaN blocks; a NaN lane
// gives 7 and its sign): the magnitudes shift straight into place, no test.
MX_D mx_u32 mx_e2m1x2_fma_finite(float lo, float hi) {
  return (mx_e2m1_mag_bits(lo) >> 22) | (mx_e2m1_mag_bits(hi) >> 18) | ((mx_bits(lo) >> 28) & 8u) | ((mx_bits(hi) >> 24) & 0x80u);
}

// ---- E2M1 from bf16 words, two values per instruction (sm_90: bf16x2 arithmetic) -----------
// mx_e2m1_mag_bits at bf16's precision: with c = 2^max(e, 0), the ulp of a + 64c (7 fraction
// bits) is E2M1's quantum, so one FMA rounds a = min(|y|, 6) to nearest-even and a second takes
// 64c back off; times 2^-126 the rounded value is a bf16 pattern whose bits 6..8 are the code
// (0.5 becomes the subnormal 2^-127). y = v * m for an E8M0 multiplier m (a power of two) is
// exact in bf16 wherever its code is not 0, so the codes equal mx_e2m1x2_fma_finite's of the
// FP32 products (host-swept over every bf16 v and every multiplier). No NaN tests (E8M0 NaN
// blocks are overwritten; see mx_e2m1x2_fma_finite).
#if MXJIT_HW_BF16X2
MX_D mx_u32 mx_bmul2(mx_u32 a, mx_u32 b) { mx_u32 d; asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
MX_D mx_u32 mx_bfma2(mx_u32 a, mx_u32 b, mx_u32 c) {
  mx_u32 d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
MX_D mx_u32 mx_bmin2(mx_u32 a, mx_u32 b) { mx_u32 d; asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
MX_D mx_u32 mx_bmax2(mx_u32 a, mx_u32 b) { mx_u32 d; asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
#else
// Host twins (the host tests): each half through FP32, exact for these operands, rounded to bf16
// by RNE (subnormals kept, as the hardware does).
MX_D float mx_bhalf(mx_u32 w, int h) { return mx_float(h ? (w & 0xffff0000u) : (w << 16)); }
MX_D mx_u32 mx_bround(float f) { const mx_u32 u = mx_bits(f); return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16; }
MX_D mx_u32 mx_bmul2(mx_u32 a, mx_u32 b) {
  return mx_bround(mx_bhalf(a, 0) * mx_bhalf(b, 0)) | (mx_bround(mx_bhalf(a, 1) * mx_bhalf(b, 1)) << 16);
}
MX_D mx_u32 mx_bfma2(mx_u32 a, mx_u32 b, mx_u32 c) {
  return mx_bround(mx_bhalf(a, 0) * mx_bhalf(b, 0) + mx_bhalf(c, 0)) |
         (mx_bround(mx_bhalf(a, 1) * mx_bhalf(b, 1) + mx_bhalf(c, 1)) << 16);
}
MX_D mx_u32 mx_bmin2(mx_u32 a, mx_u32 b) {
  const float a0 = mx_bhalf(a, 0), a1 = mx_bhalf(a, 1), b0 = mx_bhalf(b, 0), b1 = mx_bhalf(b, 1);
  return mx_bround(a0 < b0 ? a0 : b0) | (mx_bround(a1 < b1 ? a1 : b1) << 16);
}
MX_D mx_u32 mx_bmax2(mx_u32 a, mx_u32 b) {
  const float a0 = mx_bhalf(a, 0), a1 = mx_bhalf(a, 1), b0 = mx_bhalf(b, 0), b1 = mx_bhalf(b, 1);
  return mx_bround(a0 > b0 ? a0 : b0) | (mx_bround(a1 > b1 ? a1 : b1) << 16);
}
#endif
// prmt.b32 in its default mode, where a selector nibble with its msb set replicates the picked
// byte's sign bit over the byte (__byte_perm ignores that bit), and |v| of a bf16 pair by
// abs.bf16x2, which ptxas issues as an FMA (|v| - 0) off the ALU pipe that limits the
// software-encoded casts; host twins for the host tests.
#if defined(__CUDA_ARCH__)
MX_D mx_u32 mx_babs2(mx_u32 a) { mx_u32 d; asm("abs.bf16x2 %0, %1;" : "=r"(d) : "r"(a)); return d; }
MX_D mx_u32 mx_prmt(mx_u32 a, mx_u32 b, mx_u32 s) { mx_u32 d; asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s)); return d; }
#else
MX_D mx_u32 mx_babs2(mx_u32 a) { return a & 0x7fff7fffu; }
MX_D mx_u32 mx_prmt(mx_u32 a, mx_u32 b, mx_u32 s) {
  const mx_u64 x = mx_u64(a) | (mx_u64(b) << 32);
  mx_u32 d = 0;
  for (int i = 0; i < 4; ++i) {
    const mx_u32 n = (s >> (4 * i)) & 15u, byte = mx_u32(x >> (8 * (n & 7u))) & 255u;
    d |= ((n & 8u) ? ((byte & 128u) ? 255u : 0u) : byte) << (8 * i);
  }
  return d;
}
#endif
// E2M1 magnitudes of the bf16 pair a (non-negative) times m2 (the multiplier in both halves):
// the lo code in bits 6..8, the hi code in bits 22..24, every other bit zero.
MX_D mx_u32 mx_e2m1x2_mag_bf16(mx_u32 a, mx_u32 m2) {
  a = mx_bmin2(mx_bmul2(a, m2), 0x40c040c0u);                // min(|y|, 6)
  const mx_u32 c = mx_bmax2(a, 0x3f803f80u) & 0x7f807f80u;  // 2^max(e, 0)
  return mx_bmul2(mx_bfma2(c, 0xc280c280u, mx_bfma2(c, 0x42804280u, a)), 0x00800080u);  // -64, 64, 2^-126
}
// The sign bits of eight bf16 values (words w0..w3, elements 0..7) at bit 4e + 3, where an E2M1
// word holds them: byte permutes that replicate each value's sign over a byte (x = [s0 s2 s1 s3],
// y = [s4 s6 s5 s7]), regrouped ([s0 s2 s4 s6], [s1 s3 s5 s7]) and masked to bits 3 and 7.
MX_D mx_u32 mx_e2m1_signs8_bf16(mx_u32 w0, mx_u32 w1, mx_u32 w2, mx_u32 w3) {
  const mx_u32 x = mx_prmt(w0, w1, 0xfbd9u), y = mx_prmt(w2, w3, 0xfbd9u);
  return (mx_prmt(x, y, 0x5410u) & 0x08080808u) | (mx_prmt(x, y, 0x7632u) & 0x80808080u);
}
// Eight codes (one word, element e in nibble e) of the bf16 words w0..w3 (elements 0..7) times
// mult (FP32, an E8M0 multiplier: its high half is the bf16 of the same value). Element k is
// paired with element k + 4, so that a pair's two codes lie 16 bits apart in its magnitude word
// as they do in the result, and one shift places both:
//
//   pair k = |e_k| | |e_k+4| << 16    magnitudes  ......[c_k+4]..............[c_k]......
//                                                 31   24   22               8    6
//   result  [e7 e6 e5 e4 | e3 e2 e1 e0], nibble = sign << 3 | code:
//           pair 0 >> 6, pair 1 >> 2, pair 2 << 2, pair 3 << 6, plus the signs
MX_D mx_u32 mx_e2m1x8_bf16_finite(mx_u32 w0, mx_u32 w1, mx_u32 w2, mx_u32 w3, float mult) {
  const mx_u32 m2 = (mx_bits(mult) >> 16) * 0x10001u;
  // |w| recomputed on the FMA pipe: sharing the amax's masked words keeps 16 more registers live
  // across the scale computation (spills at the 6-CTA cap)
  const mx_u32 a0 = mx_babs2(w0), a1 = mx_babs2(w1), a2 = mx_babs2(w2), a3 = mx_babs2(w3);
  return mx_e2m1_signs8_bf16(w0, w1, w2, w3) + (mx_e2m1x2_mag_bf16(mx_prmt(a0, a2, 0x5410u), m2) >> 6) +
         (mx_e2m1x2_mag_bf16(mx_prmt(a0, a2, 0x7632u), m2) >> 2) + (mx_e2m1x2_mag_bf16(mx_prmt(a1, a3, 0x5410u), m2) << 2) +
         (mx_e2m1x2_mag_bf16(mx_prmt(a1, a3, 0x7632u), m2) << 6);
}
// Eight E2M1 codes of FP32 values y[0..7], none NaN, whose signs the caller gives at bits 4e + 3
// (mx_e2m1_signs8_bf16 of the inputs, or mx_e2m1_signs8_f32): the magnitudes (code << 22, see
// mx_e2m1_mag_bits) pair up as code_2j << 22 | code_2j+1 << 26 by one multiply-add, and each
// pair shifts into byte j. Used where the scale is not a power of two (NVFP4), so the bf16x2 path
// does not apply.
MX_D mx_u32 mx_e2m1x8_f32_finite(const float* y, mx_u32 signs) {
  mx_u32 p[4];  // constant trip counts: unrolled without a pragma (host tests compile this too)
  for (int j = 0; j < 4; ++j) p[j] = mx_e2m1_mag_bits(y[2 * j]) + mx_e2m1_mag_bits(y[2 * j + 1]) * 16u;
  return signs + (p[0] >> 22) + (p[1] >> 14) + (p[2] >> 6) + (p[3] << 2);
}
// The sign bits of y[0..7] at bit 4e + 3.
MX_D mx_u32 mx_e2m1_signs8_f32(const float* y) {
  mx_u32 s = 0u;
  for (int e = 0; e < 8; ++e) s |= (mx_bits(y[e]) >> 31) << (4 * e + 3);
  return s;
}

#if MXJIT_HW_FP4FP6
// sm_100a+: FP4 / FP6 pair conversions. FP4: lo -> low nibble; FP6: one code per byte.
MX_D mx_u32 mx_cvt_e2m1x2(float lo, float hi) {
  mx_u32 d;
  asm("{ .reg .b8 t; cvt.rn.satfinite.e2m1x2.f32 t, %1, %2; cvt.u32.u8 %0, t; }" : "=r"(d) : "f"(hi), "f"(lo));
  return d & 0xffu;
}
MX_D mx_u32 mx_cvt_e2m3x2(float lo, float hi) {
  mx_u16 d;
  asm("cvt.rn.satfinite.e2m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}
MX_D mx_u32 mx_cvt_e3m2x2(float lo, float hi) {
  mx_u16 d;
  asm("cvt.rn.satfinite.e3m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}
#endif

// FP32 -> stored value types for plain outputs.
MX_D mx_u32 mx_f32_to_bf16_bits(float f) { return mx_f32_to_bf16_rne(f); }
MX_D mx_u32 mx_f32_to_f16_bits(float f) { return mx_f32_to_f16_rne(f); }

// Decoders for dequantize: a generic (EB, MB) decoder through exact arithmetic.
template <int EB, int MB, int SPEC, bool ISINT>
MX_D float mx_decode_sw(mx_u32 c) {
  if (ISINT) { int k = c >= 128u ? int(c) - 256 : int(c); return float(k) * (1.0f / float(1 << MB)); }
  constexpr int kBits = 1 + EB + MB;
  constexpr int kBias = (1 << (EB - 1)) - 1;
  mx_u32 sign = (c >> (kBits - 1)) & 1u, field = (c >> MB) & ((1u << EB) - 1u), mant = c & ((1u << MB) - 1u);
  float r;
  if (SPEC == 1 && field == (1u << EB) - 1u && mant == (1u << MB) - 1u) return mx_float(0x7fc00000u);
  if (SPEC == 2 && field == (1u << EB) - 1u) r = mant ? mx_float(0x7fc00000u) : mx_float(0x7f800000u);
  else if (field == 0) r = float(mant) * mx_float(mx_u32(127 + 1 - kBias - MB) << 23);
  else r = (1.0f + float(mant) / float(1 << MB)) * mx_float(mx_u32(int(field) - kBias + 127) << 23);
  return sign ? -r : r;
}

// Decoder for dequantize (float formats): the magnitude bits shifted into an FP32 pattern have the
// right significand, and for field 0 they form the FP32 subnormal mant * 2^(-126 - MB); one exact
// multiply by 2^(127 - bias) rebiases both (no flush to zero in the kernels). Equals mx_decode_sw.
template <int EB, int MB, int SPEC, bool ISINT>
MX_D float mx_decode(mx_u32 c) {
  if (ISINT) return mx_decode_sw<EB, MB, SPEC, ISINT>(c);
  constexpr int kBits = 1 + EB + MB, kBias = (1 << (EB - 1)) - 1;
  constexpr mx_u32 kMag = (1u << (kBits - 1)) - 1u, kNanFn = kMag, kInf = ((1u << EB) - 1u) << MB;
  const mx_u32 mag = c & kMag;
  float r = mx_float(mag << (23 - MB)) * mx_float(mx_u32(127 + 127 - kBias) << 23);
  if (SPEC == 1 && mag == kNanFn) return mx_float(0x7fc00000u);
  if (SPEC == 2 && mag >= kInf) r = mag == kInf ? mx_float(0x7f800000u) : mx_float(0x7fc00000u);
  return mx_float(mx_bits(r) | ((c >> (kBits - 1) & 1u) << 31));
}

#if MXJIT_HW_FP8
// Eight FP8 codes (the bytes of c, low first) to FP32, equal to mx_decode: every E4M3/E5M2 value
// is an f16, so cvt.rn.f16x2.e4m3x2 (E5M2: the code is the f16's high byte) and cvt.f32.f16 are
// exact. A chunk holding a NaN code takes mx_decode instead: the cvt's NaN keeps a sign and
// payload the reference's (+0x7FC00000) has not. Adding 1 (E5M2: 3) to a 7-bit magnitude
// carries into bit 7 exactly for the NaN ones (0x7F; 0x7D..0x7F).
template <bool E5M2>
MX_D void mx_decode8_fp8(uint2 c, float* o) {
  const mx_u32 add = E5M2 ? 0x03030303u : 0x01010101u;
  if (((((c.x & 0x7f7f7f7fu) + add) | ((c.y & 0x7f7f7f7fu) + add)) & 0x80808080u) != 0u) {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const mx_u32 code = ((e < 4 ? c.x : c.y) >> (8 * (e & 3))) & 255u;
      o[e] = E5M2 ? mx_decode<5, 2, 2, false>(code) : mx_decode<4, 3, 1, false>(code);
    }
    return;
  }
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const mx_u32 w = p < 2 ? c.x : c.y;
    mx_u32 h;  // two f16, code 2p in the low half
    if (E5M2) {
      h = __byte_perm(w, 0u, (p & 1) ? 0x3424u : 0x1404u);  // bytes -> high bytes of the halves
    } else {
      const mx_u16 pr = mx_u16(w >> (16 * (p & 1)));
      asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(pr));
    }
    asm("cvt.f32.f16 %0, %1;" : "=f"(o[2 * p]) : "h"(mx_u16(h)));
    asm("cvt.f32.f16 %0, %1;" : "=f"(o[2 * p + 1]) : "h"(mx_u16(h >> 16)));
  }
}

// Two FP32 to a bf16 (f16) pair, lo in the low half, by one cvt.rn: round to nearest even like
// mx_f32_to_bf16_rne / mx_f32_to_f16_rne (subnormals and overflow to Inf included); a pair with a
// NaN takes those (NaN -> 0x7FC0 / 0x7E00 with its sign).
MX_D mx_u32 mx_pack_bf16x2(float lo, float hi) {
  if (lo != lo || hi != hi) return mx_u32(mx_f32_to_bf16_rne(lo)) | (mx_u32(mx_f32_to_bf16_rne(hi)) << 16);
  mx_u32 d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
MX_D mx_u32 mx_pack_f16x2(float lo, float hi) {
  if (lo != lo || hi != hi) return mx_u32(mx_f32_to_f16_rne(lo)) | (mx_u32(mx_f32_to_f16_rne(hi)) << 16);
  mx_u32 d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
#endif
