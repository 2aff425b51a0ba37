#pragma once
/// \file Exploring one pipeline on one shape: its scale-layout variants times every candidate
/// plan (runtime/tuner.hpp), each checked against the reference, then timed; ranked; the fastest
/// plan of the pipeline as given is stored in the SQLite cache for later processes.
#include <functional>
#include <string>
#include <vector>

#include "dsl/pipeline.hpp"

namespace mxjit::bench {

/// One measured variant.
struct ExploreRow {
  std::string variant;  ///< "as given" or the layout change, e.g. "s:blocked128x4"
  std::string schedule;  ///< the schedule (Schedule::str())
  double us = 0, pct_copy = 0;
  bool checked = false;
};

/// Everything `explore` measured, fastest first.
struct ExploreResult {
  std::vector<ExploreRow> rows;
  double copy_gbps = 0;
  std::string stored;  ///< the schedule stored for the pipeline as given ("" when not stored)
};

/// What to sweep besides the pipeline and shape.
struct ExploreOptions {
  bool layout_variants = true;  ///< also the other scale layouts of every byte-scale output
  bool store = true;            ///< store the fastest plan of the pipeline as given
  /// Only these schedules (each variant), instead of the tuner's candidates: an A/B of chosen ones.
  std::vector<std::string> schedules;
  /// Every (variant, plan) timed this many times, the rounds interleaved (one pass over all of
  /// them per round, so that a drift of the GPU's clock or temperature hits every plan alike);
  /// a row reports the median of its rounds. Each timing is a whole time_kernel (its own buffers
  /// and check), not time_pair's launch-by-launch interleaving on shared buffers: a sweep's many
  /// plans would hold their outputs at once.
  int rounds = 1;
};

/// Measures `p` on a random row-major input of `shape`; `progress(done, total)` after each
/// timing. Throws UsageError for a schedule that does not parse or does not apply to the pipeline.
ExploreResult explore(const Pipeline& p, const std::vector<int64_t>& shape, const ExploreOptions& options,
                      const std::function<void(int, int)>& progress = {});

/// An SVG bar chart of the rows (microseconds, fastest first).
std::string explore_svg(const ExploreResult& r, const std::string& title);

}  // namespace mxjit::bench
