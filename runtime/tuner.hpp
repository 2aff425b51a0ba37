#pragma once
/// \file The tuner's memory: the winning schedule per (pipeline, arch, stride class, shape class),
/// kept in the SQLite cache so later processes use it without searching. The search itself (which
/// needs a GPU and data) is `mxjit explore` / bench/explore.cpp.
///
/// Stored form: Schedule::str() (named fields). Rows are keyed by the generator version too, so the
/// positional tune(...) rows of generator 23 and older are never read again (their winners were
/// tuned for that generator's kernels); they stay in the file until `mxjit cache clear`.
#include <string>
#include <vector>

#include "codegen/plan.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::detail {

/// A coarse class of domain sizes: "s" (< 2^20 elements), "m" (< 2^26) or "l"; followed by "w"
/// where a whole-axis block's axis is at most kShortWholeAxis long (short_whole_schedule).
std::string shape_class(const Pipeline& p, const std::vector<int64_t>& shape);

/// The key under which a schedule is stored.
std::string schedule_key(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& shape_class);

/// The stored schedule for this key, or the default one when none (or an unreadable one) was stored.
Schedule stored_schedule(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& shape_class);

/// Stores `schedule` as the winner for this key.
void store_schedule(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& shape_class,
                    const Schedule& schedule);

/// The schedules worth trying for `p` (the default first), each one that make_plan takes.
std::vector<Schedule> schedule_candidates(const Pipeline& p, const Target& t, const StrideClass& sc);

}  // namespace mxjit::detail
