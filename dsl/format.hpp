#pragma once
/// \file Element and scale formats of the OCP MX spec (and NVFP4), as values.
///
/// A floating-point element format is (ebits, mbits, specials); everything else (bias, emax,
/// max normal, code width) follows from those three, so user-defined formats are one line:
/// `fp_format(3, 3)`. MXINT8 is the one fixed-point format: code k in [-127, 127] means k * 2^-6.
#include <cstdint>
#include <string>
#include <string_view>

namespace mxjit {

/// Which codes of a floating-point format are special.
enum class Specials : uint8_t {
  none,  ///< every code is finite (FP6, FP4 and user formats): no Inf, no NaN
  fn,    ///< "finite + NaN" (FP8 E4M3): S.1111.111 is NaN, no Inf
  ieee,  ///< IEEE-like (FP8 E5M2): top exponent is Inf (mantissa 0) or NaN
};

/// An element format: what each quantized value is stored as.
struct ElemFormat {
  std::string_view name;  ///< "e4m3", "e2m1", "int8", or "" for user formats (see str())
  int ebits = 0;          ///< exponent bits; 0 for INT8
  int mbits = 0;          ///< mantissa bits (6 for INT8: the fixed-point fraction bits)
  Specials specials = Specials::none;
  bool is_int = false;    ///< MXINT8: two's complement k, value k * 2^-mbits, |k| <= 127

  /// Bits per code (8, 6 or 4 for the standard formats).
  constexpr int bits() const { return is_int ? 8 : 1 + ebits + mbits; }
  /// Exponent bias, 2^(ebits-1) - 1.
  constexpr int bias() const { return is_int ? 0 : (1 << (ebits - 1)) - 1; }
  /// Unbiased exponent of the largest normal (0 for INT8).
  constexpr int emax() const {
    if (is_int) return 0;
    int top = (1 << ebits) - 1;
    return (specials == Specials::ieee ? top - 1 : top) - bias();
  }
  /// Unbiased exponent of the smallest normal.
  constexpr int emin() const { return is_int ? 0 : 1 - bias(); }
  /// Largest finite magnitude (448 for E4M3, 6 for E2M1, 127/64 for INT8).
  constexpr double max_normal() const {
    if (is_int) return 127.0 / (1 << mbits);
    int mant_max = (1 << mbits) - 1 - (specials == Specials::fn ? 1 : 0);
    return ldexp2(emax()) * (1.0 + mant_max / double(1 << mbits));
  }
  /// floor(log2(max_normal)).
  constexpr int max_normal_log2() const { return is_int ? 0 : emax(); }
  /// True when the format has a NaN code.
  constexpr bool has_nan() const { return specials != Specials::none; }
  /// True for formats stored two codes per byte (FP4).
  constexpr bool packed() const { return bits() == 4; }
  /// The canonical name ("e4m3"), or "fp(e,m)" for user formats.
  std::string str() const;
  friend constexpr bool operator==(const ElemFormat& a, const ElemFormat& b) {
    return a.ebits == b.ebits && a.mbits == b.mbits && a.specials == b.specials && a.is_int == b.is_int;
  }

 private:
  static constexpr double ldexp2(int e) {
    double r = 1;
    for (; e > 0; --e) r *= 2;
    for (; e < 0; ++e) r /= 2;
    return r;
  }
};

/// FP8 E4M3 (OCP "E4M3FN"): max 448, NaN S.1111.111, no Inf.
inline constexpr ElemFormat e4m3{"e4m3", 4, 3, Specials::fn};
/// FP8 E5M2: max 57344, IEEE Inf/NaN.
inline constexpr ElemFormat e5m2{"e5m2", 5, 2, Specials::ieee};
/// FP6 E2M3: max 7.5, all codes finite.
inline constexpr ElemFormat e2m3{"e2m3", 2, 3, Specials::none};
/// FP6 E3M2: max 28, all codes finite.
inline constexpr ElemFormat e3m2{"e3m2", 3, 2, Specials::none};
/// FP4 E2M1: max 6, all codes finite; two codes per byte, even element in the low nibble.
inline constexpr ElemFormat e2m1{"e2m1", 2, 1, Specials::none};
/// MXINT8: k * 2^-6, k in [-127, 127].
inline constexpr ElemFormat int8{"int8", 0, 6, Specials::none, true};

/// A user-defined floating-point element format with all codes finite (OCP FP6/FP4 style).
/// Throws UsageError unless 1 <= ebits <= 5, 0 <= mbits <= 5 and 1 + ebits + mbits <= 8.
ElemFormat fp_format(int ebits, int mbits);

/// Looks up a standard element format by name ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "int8").
/// Throws UsageError naming the known formats.
ElemFormat elem_format_named(std::string_view name);

/// How block scales are stored. (The enumerators share names with the element formats they are
/// stored as; GCC's -Wshadow flags that, and here it is intended.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
enum class ScaleFormat : uint8_t {
  e8m0,  ///< MX: a power of two, byte = the exponent field of |s| (bias 127): 0xFF for NaN and
         ///< Inf, 0 for 2^-127 and below; only power-of-two expressions may be stored so
  e4m3,  ///< NVFP4: FP8 E4M3 block scale under an FP32 per-tensor scale
  f32,   ///< FP32 (the FP8 rowwise / per-group recipes)
  bf16,  ///< bfloat16 (RNE; NaN stored as 0x7FC0)
};
#pragma GCC diagnostic pop

/// "e8m0", "e4m3", "f32", "bf16".
std::string_view scale_format_name(ScaleFormat f);
/// The scale format named `name`; UsageError naming the known ones otherwise.
ScaleFormat scale_format_named(std::string_view name);

}  // namespace mxjit
