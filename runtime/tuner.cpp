#include "runtime/tuner.hpp"

#include "dsl/limits.hpp"
#include "runtime/compile.hpp"

namespace mxjit::detail {

std::string shape_class(const std::vector<int64_t>& shape) {
  const int64_t n = element_count(shape).value_or(kMaxElements);
  return n < (int64_t(1) << 20) ? "s" : (n < (int64_t(1) << 26) ? "m" : "l");
}

std::string tuning_key(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& cls) {
  return p.hash().hex() + "/" + t.arch + "/" + sc.str() + "/" + cls + "/" + kGeneratorVersion;
}

Tuning stored_tuning(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& cls) {
  if (auto v = disk_cache().get_tuned(tuning_key(p, t, sc, cls))) {
    try {
      return Tuning::parse(*v);
    } catch (const Error&) {
      // A damaged row means "not tuned".
    }
  }
  return Tuning{};
}

void store_tuning(const Pipeline& p, const Target& t, const StrideClass& sc, const std::string& cls,
                  const Tuning& tuning) {
  disk_cache().put_tuned(tuning_key(p, t, sc, cls), tuning.str());
}

std::vector<Tuning> tuning_candidates(const Pipeline& p, const Target& t, const StrideClass& sc) {
  std::vector<Tuning> out{Tuning{}};
  const Plan base = make_plan(p, t, sc);
  const Plan::Kind kind = base.kind;
  if (kind == Plan::Kind::grouped) {
    // The vector kernel: columns per CTA x rows in flight per thread x CTAs per SM (the cap that
    // keeps a CTA's rows in L2 between its two passes). The scalar kernel has nothing to tune.
    // With clusters (sm_90+), CTAs per group too: more CTAs per SM, each caching fewer rows
    // (4 rows in flight where 64 registers or fewer would spill 8).
    if (base.col_w == 8) {
      for (int w : {32, 64, 128})
        for (int u : {4, 8})
          for (int mb : {1, 2, 3, 4}) {
            Tuning x;
            x.tile_c = w;
            x.unroll = u;
            x.min_blocks = mb;
            out.push_back(x);
          }
      if (t.sm() >= 90)
        for (int k : {2, 4, 8})
          for (int w : {64, 128})
            for (auto [u, mb] : {std::pair{8, 2}, std::pair{4, 4}, std::pair{4, 6}, std::pair{4, 8}}) {
              Tuning x;
              x.tile_c = w;
              x.unroll = u;
              x.min_blocks = mb;
              x.cluster = k;
              out.push_back(x);
            }
    }
    return out;
  }
  if (kind == Plan::Kind::columns)
    for (int rows : {8, 16})
      for (int mb : {1, 2, 3, 4})
        for (int st : {1, 2, 3}) {
          Tuning x;
          x.min_blocks = mb;
          x.col_w = rows;
          x.stages = st;
          try {
            make_plan(p, t, sc, x);  // a ring too large for mb CTAs per SM
            out.push_back(x);
          } catch (const Error&) {
          }
        }
  if (kind == Plan::Kind::direct) {
    for (int u : {1, 2, 4})
      for (int mb : {4, 6, 8}) {
        Tuning x;
        x.unroll = u;
        x.min_blocks = mb;
        out.push_back(x);
      }
  }
  for (int tr : {32, 64})
    for (int mb : {2, 3, 4})
      for (int w : {16, 32}) {
        Tuning x;
        x.tile_r = tr;
        x.tile_c = 128;
        x.min_blocks = mb;
        x.col_w = w;
        x.hoist = 1;
        x.force_tiled = true;
        try {
          make_plan(p, t, sc, x);  // e.g. a block larger than the tile
          out.push_back(x);
        } catch (const Error&) {
        }
      }
  return out;
}

}  // namespace mxjit::detail
