#pragma once
/// \file The tuner's memory: the winning plan parameters per (pipeline, arch, stride class, shape
/// class), kept in the SQLite cache so later processes use them without searching. The search
/// itself (which needs a GPU and data) is `mxjit explore` / bench/tune.
#include <string>
#include <vector>

#include "codegen/plan.hpp"
#include "dsl/pipeline.hpp"

namespace mxjit::detail {

/// A coarse class of domain sizes: "s" (< 2^20 elements), "m" (< 2^26) or "l".
std::string shape_class(const std::vector<int64_t>& shape);

/// The key under which a tuning is stored.
std::string tuning_key(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& shape_class);

/// The stored tuning for this key, or the defaults when none was stored.
Tuning stored_tuning(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& shape_class);

/// Stores `tuning` as the winner for this key.
void store_tuning(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& shape_class,
                  const Tuning& tuning);

/// The plan parameters worth trying for `p` (the defaults first).
std::vector<Tuning> tuning_candidates(const Pipeline& p, const Target& t, const StrideClass& sc);

}  // namespace mxjit::detail
