// mxjit math: the FP32 functions that host (the CPU reference) and device (generated kernels)
// must compute bit-identically. Compiles as host C++ and as CUDA device code (NVRTC); includes
// nothing. Every function uses only separately rounded FP32 +, -, *, / (the _rn intrinsics on the
// device, so no FMA contraction can happen whatever the NVRTC flags), comparisons, integer
// conversions and exponent bit manipulation. Accuracy: a few ulp against exact math (see
// docs/numerics.md); identical bits on both sides. Device code must keep FP32 subnormals
// (no --ftz=true).
#ifndef MX_MATH_CUH
#define MX_MATH_CUH

#ifndef MX_HD
#ifdef __CUDACC__
#define MX_HD __host__ __device__ __forceinline__
#else
#define MX_HD inline
#endif
#endif

// ---- bit casts and non-contractible arithmetic --------------------------------------------
/// The bit pattern of an FP32.
MX_HD unsigned int mx_as_uint(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(unsigned int, f);
#endif
}
/// The FP32 with bit pattern u.
MX_HD float mx_as_float(unsigned int u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}
#ifdef __CUDA_ARCH__
MX_HD float mx_fadd(float a, float b) { return __fadd_rn(a, b); }
MX_HD float mx_fsub(float a, float b) { return __fsub_rn(a, b); }
MX_HD float mx_fmul(float a, float b) { return __fmul_rn(a, b); }
MX_HD float mx_fdiv(float a, float b) { return __fdiv_rn(a, b); }
#else
/// a + b, rounded once (never fused).
MX_HD float mx_fadd(float a, float b) { return a + b; }
/// a - b, rounded once.
MX_HD float mx_fsub(float a, float b) { return a - b; }
/// a * b, rounded once (never fused).
MX_HD float mx_fmul(float a, float b) { return a * b; }
/// a / b, IEEE division rounded once.
MX_HD float mx_fdiv(float a, float b) { return a / b; }
#endif

/// The bracketed division of the codes (codegen emit_packed_codes): x / d rounded once, through
/// a monotone clamp and a saturating RN cast, without the division. With r = rcp.approx.ftz(d)
/// (within 2 ulp of 1 / d where d and 1 / d are normal: wherever `miss` is 0) and rl, rh = RN(r (1 -+ 2^-20)), the ends
/// RN(x * rl) and RN(x * rh) lie at least (2^-20 - 6 * 2^-24) |x / d| from x / d where they are normal, farther than
/// RN's 2^-24 |x / d|: RN(x / d) lies between them. Below the normal range all three are smaller than 2^-125, every
/// code +-0 with the sign of x / d. So where both ends give one code, it is the division's; only a value within about
/// 2^-20 of a rounding boundary (about 1 in 2^14 values) or a NaN that the clamp drops needs the division. `miss` is 1
/// where d lies outside [2^-125, 2^123) in magnitude (rl and rh then could leave the normal range): divide.
struct MxDivBracket {
  float rl, rh;
  unsigned miss;
};
MX_HD MxDivBracket mx_div_bracket(float d) {
#ifdef __CUDA_ARCH__
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));  // one MUFU.RCP: no subnormal rescale
#else
  const float r = 1.0f / d;
#endif
  return {mx_fmul(r, 0x1.ffffep-1f), mx_fmul(r, 0x1.00001p+0f),
          (mx_as_uint(d) & 0x7fffffffu) - 0x01000000u < 0x7c000000u ? 0u : 1u};
}

/// The canonical quiet NaN both sides produce (positive, 0x7FC00000).
MX_HD float mx_qnan() { return mx_as_float(0x7FC00000u); }
/// True for NaN.
MX_HD bool mx_isnan(float x) { return (mx_as_uint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
/// |x| (clears the sign bit; NaN stays NaN).
MX_HD float mx_fabs(float x) { return mx_as_float(mx_as_uint(x) & 0x7FFFFFFFu); }
/// |mag| with the sign of sgn.
MX_HD float mx_copysign(float mag, float sgn) {
  return mx_as_float((mx_as_uint(mag) & 0x7FFFFFFFu) | (mx_as_uint(sgn) & 0x80000000u));
}
/// max with NaN propagation (canonical NaN); max(-0, +0) = +0 in either order.
MX_HD float mx_fmax_nan(float a, float b) {
  if (mx_isnan(a) || mx_isnan(b)) return mx_qnan();
  if (a == b) return (mx_as_uint(a) & 0x80000000u) ? b : a;
  return a > b ? a : b;
}
/// min with NaN propagation (canonical NaN); min(-0, +0) = -0 in either order.
MX_HD float mx_fmin_nan(float a, float b) {
  if (mx_isnan(a) || mx_isnan(b)) return mx_qnan();
  if (a == b) return (mx_as_uint(a) & 0x80000000u) ? a : b;
  return a < b ? a : b;
}
/// max(x, +0) with NaN propagation.
MX_HD float mx_relu(float x) { return mx_fmax_nan(x, 0.0f); }

/// 2^k for -149 <= k <= 127, exactly (subnormal powers below -126).
MX_HD float mx_pow2(int k) {
  return k >= -126 ? mx_as_float((unsigned int)(k + 127) << 23) : mx_as_float(1u << (k + 149));
}
/// p * 2^n rounded once, for any n (into the subnormals, to +-0 or to +-Inf as IEEE does):
/// p is first normalised exactly to m in [1, 2), then one multiply by 2^k rounds.
MX_HD float mx_ldexp(float p, int n) {
  unsigned int u = mx_as_uint(p) & 0x7FFFFFFFu;
  if (u == 0 || u >= 0x7F800000u) return p;
  if (u < 0x00800000u) {  // subnormal p: scale up exactly first
    p = mx_fmul(p, mx_pow2(64));
    n -= 64;
    u = mx_as_uint(p) & 0x7FFFFFFFu;
  }
  const int e = (int)(u >> 23) - 127;
  const float m = mx_fmul(p, mx_pow2(-e));  // exact: |m| in [1, 2)
  const int k = n + e;
  if (k > 127) return mx_fmul(mx_fmul(m, mx_pow2(127)), 2.0f);    // overflows to +-Inf
  if (k < -150) return mx_fmul(p, 0.0f);                            // below half the least subnormal
  if (k == -150) return mx_fmul(mx_fmul(m, 0.5f), mx_pow2(-149));  // m/2 exact, then one rounding
  return mx_fmul(m, mx_pow2(k));
}

// ---- scale-expression primitives (dsl/dsl.hpp; docs/numerics.md "Scale expressions") -------
/// Count of leading zero bits of u (32 for 0).
MX_HD int mx_clz(unsigned int u) {
#ifdef __CUDA_ARCH__
  return __clz(u);
#else
  return u == 0 ? 32 : __builtin_clz(u);
#endif
}
/// max ignoring NaN (CUDA fmaxf): NaN only when both are; fmax(-0, +0) = +0 in either order.
MX_HD float mx_fmax_num(float a, float b) {
  if (mx_isnan(a)) return mx_isnan(b) ? mx_qnan() : b;
  return mx_isnan(b) ? a : mx_fmax_nan(a, b);
}
/// min ignoring NaN (CUDA fminf): NaN only when both are; fmin(-0, +0) = -0 in either order.
MX_HD float mx_fmin_num(float a, float b) {
  if (mx_isnan(a)) return mx_isnan(b) ? mx_qnan() : b;
  return mx_isnan(b) ? a : mx_fmin_nan(a, b);
}
/// The four above against a constant c that is neither NaN nor +-0, as one min/max instruction
/// on the GPU: with c nonzero no signed-zero tie can arise, so the hardware's NaN rule (min/max
/// skip NaN, .NaN keeps it as the canonical NaN) is the whole difference. A clamp's bounds.
MX_HD float mx_fmin_num_c(float a, float c) {
#ifdef __CUDA_ARCH__
  return fminf(a, c);
#else
  return mx_fmin_num(a, c);
#endif
}
MX_HD float mx_fmax_num_c(float a, float c) {
#ifdef __CUDA_ARCH__
  return fmaxf(a, c);
#else
  return mx_fmax_num(a, c);
#endif
}
MX_HD float mx_fmin_nan_c(float a, float c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float d;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(c));
  return d;
#else
  return mx_fmin_nan(a, c);
#endif
}
MX_HD float mx_fmax_nan_c(float a, float c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(c));
  return d;
#else
  return mx_fmax_nan(a, c);
#endif
}
/// floor(log2(u)) of a finite positive FP32 bit pattern, subnormals included; the pattern
/// 0x7F800000 (a rounding carry out of the largest binade) gives 128.
MX_HD int mx_floor_log2_pattern(unsigned int u) {
  return u >= 0x00800000u ? (int)(u >> 23) - 127 : (31 - mx_clz(u)) - 149;
}
/// floor(log2(x)) as an FP32: exact for finite x > 0; 0 -> -Inf, +Inf -> +Inf, NaN or x < 0 ->
/// NaN. With mbits >= 0, of x's bit pattern first rounded to mbits mantissa bits, ties to even
/// (the carry may reach the next binade, 2^128 included; a pattern rounded to 0 gives -Inf). A tie
/// goes to the even significand: its last kept bit, or with mbits 0 its integer bit (as mx_scale_even).
MX_HD float mx_floor_log2_value(float x, int mbits) {
  unsigned int u = mx_as_uint(x);
  if (mx_isnan(x) || (u >> 31 && u != 0x80000000u)) return mx_qnan();
  u &= 0x7FFFFFFFu;
  if (u == 0x7F800000u) return x;
  const int sh = 23 - mbits;
  if (mbits >= 0 && sh > 0) {
    const unsigned int low = u & ((1u << sh) - 1u), half = 1u << (sh - 1);
    unsigned int r = u >> sh;
    const unsigned int odd = mbits > 0 ? (r & 1u) : (unsigned int)(r != 0u);
    if (low > half || (low == half && odd)) r += 1u;
    u = r << sh;
  }
  if (u == 0) return mx_as_float(0xFF800000u);
  return (float)mx_floor_log2_pattern(u);
}
/// ceil(log2(x)) as an FP32: exact for finite x > 0; 0 -> -Inf, +Inf -> +Inf, NaN or x < 0 -> NaN.
MX_HD float mx_ceil_log2_value(float x) {
  unsigned int u = mx_as_uint(x);
  if (mx_isnan(x) || (u >> 31 && u != 0x80000000u)) return mx_qnan();
  u &= 0x7FFFFFFFu;
  if (u == 0x7F800000u) return x;
  if (u == 0) return mx_as_float(0xFF800000u);
  const int e = mx_floor_log2_pattern(u);
  const bool pow2 = u >= 0x00800000u ? (u & 0x7FFFFFu) == 0 : (u & (u - 1u)) == 0;
  return (float)(pow2 ? e : e + 1);
}
/// 2^floor(e) exactly: NaN -> NaN, e >= 128 -> +Inf, e < -149 -> +0 (so -Inf -> +0).
MX_HD float mx_exp2_floor(float e) {
  if (mx_isnan(e)) return mx_qnan();
  if (e >= 128.0f) return mx_as_float(0x7F800000u);
  if (e < -149.0f) return 0.0f;
  int i = (int)e;  // truncates toward zero: step down for negative non-integers
  if ((float)i > e) i -= 1;
  return mx_pow2(i);
}
/// The largest power of two <= |x| with x's sign (subnormals exactly); +-0, +-Inf, NaN stay.
MX_HD float mx_pow2_floor(float x) {
  const unsigned int s = mx_as_uint(x) & 0x80000000u, u = mx_as_uint(x) & 0x7FFFFFFFu;
  if (u == 0 || u >= 0x7F800000u) return mx_isnan(x) ? mx_qnan() : x;
  return mx_as_float(s | (u >= 0x00800000u ? (u & 0x7F800000u) : (1u << (31 - mx_clz(u)))));
}
/// The smallest power of two >= |x| with x's sign (subnormals exactly; above 2^127: Inf);
/// +-0, +-Inf, NaN stay.
MX_HD float mx_pow2_ceil(float x) {
  // Selects, not branches: a scale is computed in every lane of every chunk.
  const unsigned int s = mx_as_uint(x) & 0x80000000u, u = mx_as_uint(x) & 0x7FFFFFFFu;
  const unsigned int normal = (u & 0x7FFFFFu) ? (u & 0x7F800000u) + 0x00800000u : u;
  const unsigned int sub = (u & (u - 1u)) == 0 ? u : (1u << (32 - mx_clz(u)));  // u = 0 stays 0
  const float r = mx_as_float(s | (u >= 0x00800000u ? normal : sub));
  return u >= 0x7F800000u ? (mx_isnan(x) ? mx_qnan() : x) : r;
}
/// The E8M0 byte of a scale value: the exponent field of |s| (0xFF for NaN and Inf; 0 for
/// 2^-127, subnormals and 0). Exact for the powers of two E8M0 holds.
MX_HD unsigned int mx_e8m0_field(float s) { return (mx_as_uint(s) >> 23) & 0xFFu; }
/// The value of an E8M0 byte: 2^(byte - 127) (byte 0 is the subnormal 2^-127), NaN for 0xFF.
MX_HD float mx_e8m0_decode(unsigned int byte) {
  return byte == 255u ? mx_qnan() : (byte == 0u ? mx_as_float(0x00400000u) : mx_as_float(byte << 23));
}
/// 1 / mx_e8m0_decode(byte), exactly (the quotient of 1 by a power of two is one): 2^(127 - byte),
/// the subnormal 2^-127 for byte 254, NaN for 0xFF. No division.
MX_HD float mx_e8m0_recip(unsigned int byte) {
  return byte >= 254u ? (byte == 255u ? mx_qnan() : mx_as_float(0x00400000u)) : mx_as_float((254u - byte) << 23);
}

// ---- exp --------------------------------------------------------------------------------
/// exp(hi + lo) as p * 2^n (p in [0.7, 1.42]); |lo| small next to ulp(hi). Cody-Waite reduction
/// with ln2 in two parts (the first has 15 significant bits, so n * ln2_hi is exact), then a
/// degree-8 polynomial on |r| <= 0.36: p = 1 + r + r^2 R(r).
MX_HD float mx_exp_parts(float hi, float lo, int* n_out) {
  if (hi < -200.0f) hi = -200.0f;
  if (hi > 90.0f) hi = 90.0f;
  const float t = mx_fmul(hi, 1.44269502f);
  const int n = (int)mx_fadd(t, t >= 0.0f ? 0.5f : -0.5f);
  const float nf = (float)n;
  float r = mx_fsub(hi, mx_fmul(nf, 0.693145751953125f));
  r = mx_fsub(r, mx_fmul(nf, 1.42860677e-6f));
  r = mx_fadd(r, lo);
  float R = 0.0000248641641f;
  R = mx_fadd(mx_fmul(R, r), 0.000199038620f);
  R = mx_fadd(mx_fmul(R, r), 0.00138888483f);
  R = mx_fadd(mx_fmul(R, r), 0.00833329276f);
  R = mx_fadd(mx_fmul(R, r), 0.0416666667f);
  R = mx_fadd(mx_fmul(R, r), 0.166666667f);
  R = mx_fadd(mx_fmul(R, r), 0.5f);
  *n_out = n;
  return mx_fadd(1.0f, mx_fadd(r, mx_fmul(mx_fmul(r, r), R)));
}
/// e^x. NaN -> NaN; overflow -> +Inf; underflow -> subnormals, then +0.
MX_HD float mx_exp(float x) {
  if (mx_isnan(x)) return mx_qnan();
  if (x > 89.0f) return mx_as_float(0x7F800000u);
  if (x < -104.0f) return 0.0f;
  int n;
  const float p = mx_exp_parts(x, 0.0f, &n);
  return mx_ldexp(p, n);
}

// ---- tanh, sigmoid, silu, gelu(tanh) ------------------------------------------------------
/// tanh(x): x for |x| < 2^-12, odd polynomial x + x t R(t) (t = x^2) for |x| < 0.625, 1 - 2/(e^{2|x|} + 1) above,
/// +-1 from |x| >= 10.
MX_HD float mx_tanh(float x) {
  if (mx_isnan(x)) return mx_qnan();
  const float a = mx_fabs(x);
  if (a < 0.000244140625f) return x;  // |x| < 2^-12: x^3/3 is below half an ulp of x (keeps -0)
  if (a < 0.625f) {
    const float t = mx_fmul(x, x);
    float R = -0.000121937772f;
    R = mx_fadd(mx_fmul(R, t), 0.000515213136f);
    R = mx_fadd(mx_fmul(R, t), -0.00142822753f);
    R = mx_fadd(mx_fmul(R, t), 0.00358601647f);
    R = mx_fadd(mx_fmul(R, t), -0.00886242890f);
    R = mx_fadd(mx_fmul(R, t), 0.0218694282f);
    R = mx_fadd(mx_fmul(R, t), -0.0539682517f);
    R = mx_fadd(mx_fmul(R, t), 0.133333333f);
    R = mx_fadd(mx_fmul(R, t), -0.333333333f);
    return mx_fadd(x, mx_fmul(x, mx_fmul(t, R)));
  }
  float r = 1.0f;
  if (a < 10.0f) r = mx_fsub(1.0f, mx_fdiv(2.0f, mx_fadd(mx_exp(mx_fadd(a, a)), 1.0f)));
  return mx_copysign(r, x);
}
/// s * sigmoid(z), without cancellation: s / (1 + e^-z) for z >= 0, s e^z / (1 + e^z) below,
/// (s * p) * 2^n with e^z = p 2^n once 1 + e^z rounds to 1 (z < -20).
MX_HD float mx_scaled_sigmoid(float z, float s) {
  if (mx_isnan(z) || mx_isnan(s)) return mx_qnan();
  if (z >= 0.0f) return mx_fdiv(s, mx_fadd(1.0f, mx_exp(-z)));
  if (z < -200.0f) return mx_copysign(0.0f, s);
  int n;
  const float p = mx_exp_parts(z, 0.0f, &n);
  if (z < -20.0f) return mx_ldexp(mx_fmul(s, p), n);
  const float e = mx_ldexp(p, n);
  return mx_fdiv(mx_fmul(s, e), mx_fadd(1.0f, e));
}
/// 1 / (1 + e^-x).
MX_HD float mx_sigmoid(float x) { return mx_scaled_sigmoid(x, 1.0f); }
/// x * sigmoid(x) (evaluated as x / (1 + e^-x), see mx_scaled_sigmoid).
MX_HD float mx_silu(float x) { return mx_scaled_sigmoid(x, x); }
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated as x * sigmoid(2u) with
/// 2u = x (k1 + k2 x^2), k1 = 2 sqrt(2/pi), k2 = 2 sqrt(2/pi) 0.044715 (each rounded to FP32).
MX_HD float mx_gelu_tanh(float x) {
  const float z = mx_fmul(x, mx_fadd(1.59576912f, mx_fmul(0.0713548162f, mx_fmul(x, x))));
  return mx_scaled_sigmoid(z, x);
}

// ---- erf, gelu(erf) -----------------------------------------------------------------------
/// erf(x) for |x| <= 1: x P(x^2).
MX_HD float mx_erf_small(float x) {
  const float t = mx_fmul(x, x);
  float P = -0.000000104691103f;
  P = mx_fadd(mx_fmul(P, t), 0.00000153063732f);
  P = mx_fadd(mx_fmul(P, t), -0.0000147950314f);
  P = mx_fadd(mx_fmul(P, t), 0.000120462613f);
  P = mx_fadd(mx_fmul(P, t), -0.000854793374f);
  P = mx_fadd(mx_fmul(P, t), 0.00522396719f);
  P = mx_fadd(mx_fmul(P, t), -0.0268661691f);
  P = mx_fadd(mx_fmul(P, t), 0.112837917f);
  P = mx_fadd(mx_fmul(P, t), -0.376126389f);
  P = mx_fadd(mx_fmul(P, t), 1.12837917f);
  return mx_fmul(x, P);
}
/// erfc(z) * e^{z^2} for 0.5 <= z <= 10.5: polynomials in z - c (c dyadic) on nine pieces.
MX_HD float mx_erfcx_poly(float z) {
  float u, Q;
  if (z < 0.75f) {
    u = mx_fsub(z, 0.625f);  // |err| 1.9e-12
    Q = -0.00915639646f;
    Q = mx_fadd(mx_fmul(Q, u), 0.0209430033f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0448977489f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0905334480f);
    Q = mx_fadd(mx_fmul(Q, u), -0.168829651f);
    Q = mx_fadd(mx_fmul(Q, u), 0.286587749f);
    Q = mx_fadd(mx_fmul(Q, u), -0.432361816f);
    Q = mx_fadd(mx_fmul(Q, u), 0.556813881f);
  } else if (z < 1.0f) {
    u = mx_fsub(z, 0.875f);  // |err| 7.8e-13
    Q = -0.00408818384f;
    Q = mx_fadd(mx_fmul(Q, u), 0.00997262331f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0229256292f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0498279281f);
    Q = mx_fadd(mx_fmul(Q, u), -0.100914393f);
    Q = mx_fadd(mx_fmul(Q, u), 0.187956925f);
    Q = mx_fadd(mx_fmul(Q, u), -0.315833896f);
    Q = mx_fadd(mx_fmul(Q, u), 0.464311583f);
  } else if (z < 1.5f) {
    u = mx_fsub(z, 1.25f);  // |err| 2.7e-12
    Q = 0.000481643299f;
    Q = mx_fadd(mx_fmul(Q, u), -0.00134892955f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00355274917f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00908053922f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0220113705f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0502182933f);
    Q = mx_fadd(mx_fmul(Q, u), 0.106795571f);
    Q = mx_fadd(mx_fmul(Q, u), -0.208821876f);
    Q = mx_fadd(mx_fmul(Q, u), 0.367822916f);
  } else if (z < 2.0f) {
    u = mx_fsub(z, 1.75f);  // |err| 5.5e-13
    Q = 0.000110934697f;
    Q = mx_fadd(mx_fmul(Q, u), -0.000348319039f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00103913736f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00302074975f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00840432037f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0222599992f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0557636301f);
    Q = mx_fadd(mx_fmul(Q, u), -0.130976345f);
    Q = mx_fadd(mx_fmul(Q, u), 0.284972235f);
  } else if (z < 3.0f) {
    u = mx_fsub(z, 2.5f);  // |err| 2.4e-12
    Q = -0.00000438907360f;
    Q = mx_fadd(mx_fmul(Q, u), 0.0000166574960f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0000588304380f);
    Q = mx_fadd(mx_fmul(Q, u), 0.000210866430f);
    Q = mx_fadd(mx_fmul(Q, u), -0.000733594389f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00246705056f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00800156927f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0249379967f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0743473468f);
    Q = mx_fadd(mx_fmul(Q, u), 0.210806364f);
  } else if (z < 4.0f) {
    u = mx_fsub(z, 3.5f);  // |err| 1.9e-13
    Q = -0.000000413297751f;
    Q = mx_fadd(mx_fmul(Q, u), 0.00000189204496f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00000823544439f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0000361696363f);
    Q = mx_fadd(mx_fmul(Q, u), -0.000155469146f);
    Q = mx_fadd(mx_fmul(Q, u), 0.000652687407f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00267307443f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0106611332f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0413235778f);
    Q = mx_fadd(mx_fmul(Q, u), 0.155293656f);
  } else if (z < 5.5f) {
    u = mx_fsub(z, 4.75f);  // |err| 8.2e-13
    Q = -0.0000000371565538f;
    Q = mx_fadd(mx_fmul(Q, u), 0.000000209313109f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00000111079302f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00000607663600f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0000327759374f);
    Q = mx_fadd(mx_fmul(Q, u), 0.000173929207f);
    Q = mx_fadd(mx_fmul(Q, u), -0.000908098886f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00466132631f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0235034486f);
    Q = mx_fadd(mx_fmul(Q, u), 0.116302707f);
  } else if (z < 7.5f) {
    u = mx_fsub(z, 6.5f);  // |err| 7.6e-13
    Q = -0.00000000246427838f;
    Q = mx_fadd(mx_fmul(Q, u), 0.0000000177314258f);
    Q = mx_fadd(mx_fmul(Q, u), -0.000000120300408f);
    Q = mx_fadd(mx_fmul(Q, u), 0.000000849455120f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00000594769468f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0000412106239f);
    Q = mx_fadd(mx_fmul(Q, u), -0.000282736477f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00192020781f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0129054557f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0858056701f);
  } else {
    u = mx_fsub(z, 9.0f);  // |err| 1.7e-12
    Q = -0.000000000125217335f;
    Q = mx_fadd(mx_fmul(Q, u), 0.00000000119312938f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0000000106050742f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0000000999208599f);
    Q = mx_fadd(mx_fmul(Q, u), -0.000000937761579f);
    Q = mx_fadd(mx_fmul(Q, u), 0.00000874005495f);
    Q = mx_fadd(mx_fmul(Q, u), -0.0000810038210f);
    Q = mx_fadd(mx_fmul(Q, u), 0.000746514265f);
    Q = mx_fadd(mx_fmul(Q, u), -0.00684013442f);
    Q = mx_fadd(mx_fmul(Q, u), 0.0623077240f);
  }

  return Q;
}
/// erfc(z) = q * 2^n for 0.5 <= z < 10.1 given z^2 = sq_hi + sq_lo (sq_hi exact, sq_lo the small
/// rest), so that e^{-z^2} is not spoiled by the rounding of z^2; returns q.
MX_HD float mx_erfc_parts(float z, float sq_hi, float sq_lo, int* n) {
  const float p = mx_exp_parts(-sq_hi, -sq_lo, n);
  return mx_fmul(mx_erfcx_poly(z), p);
}
/// Splits x into a 12-bit head h (exact square) and the rest: x^2 = h*h + l*(x + h).
MX_HD void mx_split_square(float x, float* hi, float* lo) {
  const float h = mx_as_float(mx_as_uint(x) & 0xFFFFF000u);
  const float l = mx_fsub(x, h);
  *hi = mx_fmul(h, h);
  *lo = mx_fmul(l, mx_fadd(x, h));
}
/// erf(x): polynomial for |x| < 1, 1 - erfc(|x|) up to 4, +-1 beyond.
MX_HD float mx_erf(float x) {
  if (mx_isnan(x)) return mx_qnan();
  const float a = mx_fabs(x);
  if (a < 1.0f) return mx_erf_small(x);
  float r = 1.0f;
  if (a < 4.0f) {
    float hi, lo;
    mx_split_square(a, &hi, &lo);
    int n;
    const float q = mx_erfc_parts(a, hi, lo, &n);
    r = mx_fsub(1.0f, mx_ldexp(q, n));
  }
  return mx_copysign(r, x);
}
/// 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), with erfc from x^2 / 2 exactly where
/// |x / sqrt 2| >= 0.5 (no cancellation for negative x).
MX_HD float mx_gelu_erf(float x) {
  if (mx_isnan(x)) return mx_qnan();
  const float z = mx_fmul(mx_fabs(x), 0.707106769f);
  if (z < 0.5f) return mx_fmul(mx_fmul(0.5f, x), mx_fadd(1.0f, mx_erf_small(mx_fmul(x, 0.707106769f))));
  if (z >= 10.1f) return x > 0.0f ? x : mx_copysign(0.0f, x);  // erfc(10.1) < 2^-150
  float hi, lo;
  mx_split_square(mx_fabs(x), &hi, &lo);
  int n;  // erfc(|x| / sqrt 2) = q 2^n
  const float q = mx_erfc_parts(z, mx_fmul(hi, 0.5f), mx_fmul(lo, 0.5f), &n);
  if (x > 0.0f) return mx_fmul(x, mx_fsub(1.0f, mx_fmul(0.5f, mx_ldexp(q, n))));
  return mx_ldexp(mx_fmul(mx_fmul(0.5f, x), q), n);
}

// ---- 16-bit float conversions -------------------------------------------------------------
/// bf16 bits -> FP32 (exact).
MX_HD float mx_bf16_to_f32(unsigned short h) { return mx_as_float((unsigned int)h << 16); }
/// f16 bits -> FP32 (exact; NaN payload kept in the top mantissa bits).
MX_HD float mx_f16_to_f32(unsigned short h) {
  const unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
  const unsigned int e = ((unsigned int)h >> 10) & 0x1Fu, m = (unsigned int)h & 0x3FFu;
  if (e == 0x1Fu) return mx_as_float(sign | 0x7F800000u | (m << 13));
  if (e == 0) return mx_copysign(mx_fmul((float)m, 5.9604644775390625e-8f), mx_as_float(sign));  // m * 2^-24
  return mx_as_float(sign | ((e + 112u) << 23) | (m << 13));
}
/// FP32 -> bf16 bits, round to nearest even; NaN -> 0x7FC0 | sign; overflow -> Inf.
MX_HD unsigned short mx_f32_to_bf16_rne(float f) {
  const unsigned int u = mx_as_uint(f);
  if (mx_isnan(f)) return (unsigned short)(((u >> 16) & 0x8000u) | 0x7FC0u);
  return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
/// FP32 -> f16 bits, round to nearest even with subnormals; NaN -> 0x7E00 | sign; |f| >= 65520
/// -> Inf.
MX_HD unsigned short mx_f32_to_f16_rne(float f) {
  const unsigned int u = mx_as_uint(f);
  const unsigned int sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (unsigned short)(sign | 0x7E00u);
  if (a >= 0x477FF000u) return (unsigned short)(sign | 0x7C00u);
  if (a >= 0x38800000u) {  // normal f16
    unsigned int h = (a >> 13) - (112u << 10);
    const unsigned int rem = a & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h += 1u;
    return (unsigned short)(sign | h);
  }
  const unsigned int e = a >> 23;
  if (e < 102u) return (unsigned short)sign;  // below 2^-25: rounds to zero
  const unsigned int mant = (a & 0x7FFFFFu) | 0x800000u, shift = 126u - e;  // value = mant 2^(e-150)
  unsigned int q = mant >> shift;
  const unsigned int rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q += 1u;
  return (unsigned short)(sign | q);
}

/// x rounded to bf16 / f16 (nearest even) and widened back: the DSL's round_to.
MX_HD float mx_round_bf16(float x) { return mx_bf16_to_f32(mx_f32_to_bf16_rne(x)); }
MX_HD float mx_round_f16(float x) { return mx_f16_to_f32(mx_f32_to_f16_rne(x)); }

// ---- Philox4x32-10 ------------------------------------------------------------------------
/// Philox4x32 with 10 rounds (Salmon et al. 2011; Random123 constants): out = philox(ctr, key).
MX_HD void mx_philox4x32_10(const unsigned int ctr[4], const unsigned int key[2], unsigned int out[4]) {
  unsigned int c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = (unsigned long long)0xD2511F53u * c0;
    const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c2;
    const unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
    const unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

#endif  // MX_MATH_CUH
