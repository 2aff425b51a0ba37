#pragma once
// Skipping a test case honestly: the case prints one "[SKIP] <why>" line and returns, and ctest,
// which runs every case on its own (cmake/doctest_cases.cmake), reports it as skipped, not passed.
#include <doctest/doctest.h>

#include "runtime/device.hpp"

/// Ends the calling test case as skipped, saying why (a stream expression). Use it before the
/// case checks anything: ctest reports a case that printed the line as skipped whatever else it did.
#define MXJIT_SKIP(why)        \
  do {                         \
    MESSAGE("[SKIP] " << why); \
    return;                    \
  } while (0)

/// Skips the calling test case where no GPU is present, with the driver's reason.
#define MXJIT_REQUIRE_GPU()                                                                     \
  do {                                                                                          \
    if (!::mxjit::gpu_available()) MXJIT_SKIP("no GPU: " << ::mxjit::gpu_unavailable_reason()); \
  } while (0)
