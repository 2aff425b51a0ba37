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
  std::string tuning;   ///< the plan parameters (Tuning::str())
  double us = 0, pct_copy = 0;
  bool checked = false;
};

/// Everything `explore` measured, fastest first.
struct ExploreResult {
  std::vector<ExploreRow> rows;
  double copy_gbps = 0;
  std::string stored;  ///< the tuning stored for the pipeline as given ("" when not stored)
};

/// Measures `p` on a random row-major input of `shape`; `progress(done, total)` after each variant.
/// With `store`, the best plan of the pipeline as given (if it beats the defaults) is stored.
ExploreResult explore(const Pipeline& p, const std::vector<int64_t>& shape, bool layout_variants, bool store,
                      const std::function<void(int, int)>& progress = {});

/// An SVG bar chart of the rows (microseconds, fastest first).
std::string explore_svg(const ExploreResult& r, const std::string& title);

}  // namespace mxjit::bench
