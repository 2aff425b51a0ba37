#pragma once
/// \file The GPU architecture a kernel is generated and compiled for.
#include <string>

namespace mxjit {

/// An NVRTC architecture such as "sm_90a" or "sm_100a" and the features code generation uses.
struct Target {
  std::string arch;  ///< exact NVRTC arch: "sm_89", "sm_90a", "sm_100a", "sm_100f", "sm_120a", ...

  /// Parses and checks an arch string; throws UsageError naming the accepted forms.
  static Target parse(const std::string& arch);
  /// Compute capability as major*10 + minor (90 for sm_90a, 100 for sm_100a).
  int sm() const;
  /// True for the arch-specific ('a') or family ('f') variants.
  bool arch_specific() const;
  /// cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (sm_89 and later).
  bool hw_fp8() const { return sm() >= 89; }
  /// cvt for e2m1/e2m3/e3m2 and ue8m0 (sm_100a/sm_100f/sm_103a/sm_120a...).
  bool hw_fp4_fp6() const { return sm() >= 100 && arch_specific(); }
  /// Shared memory per SM in bytes: 228 KiB on sm_90 and sm_100-sm_119, 164 KiB on sm_80 and
  /// sm_87, 100 KiB on sm_86, sm_89 and sm_120+ (the CUDA programming guide's table).
  int smem_per_sm() const;
  /// The most shared memory one CTA may use: smem_per_sm() less smem_reserved_per_cta().
  int smem_per_cta() const { return smem_per_sm() - smem_reserved_per_cta(); }
  /// Shared memory the driver reserves for each resident CTA (1 KiB from sm_80 on).
  int smem_reserved_per_cta() const { return 1024; }
  /// Resident threads an SM holds: 2048 on sm_80, sm_87, sm_90 and sm_100-sm_119; 1536 on sm_86,
  /// sm_89 and sm_120+ (the CUDA programming guide's table). A schedule's CTAs must fit in it.
  int max_threads_per_sm() const;
  /// Resident CTAs an SM holds: 16 on sm_86, 24 on sm_89, 32 elsewhere from sm_80 on.
  int max_ctas_per_sm() const;
  /// The most CTAs in one thread-block cluster: 16 on sm_90 to sm_119 (above the portable 8, a
  /// launch opts in with CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED), 8 on sm_120 and
  /// later, 1 (no clusters) before sm_90.
  int max_cluster() const;
  friend bool operator==(const Target&, const Target&) = default;
};

}  // namespace mxjit
