#pragma once
/// \file The benchmark program (docs/design.md §8): copy bandwidth, then each cast case timed with CUDA
/// events (warm-up, median of >= 20 runs, rotating inputs larger than L2, random non-zero data),
/// each checked against the CPU reference on a small shape first. Prints a table; writes CSV,
/// JSON and an SVG chart.
#include <string>
#include <vector>

namespace mxjit {
class Kernel;
}
namespace mxjit::bench {

/// What to run and where to write.
struct BenchOptions {
  std::string filter;          ///< run only cases whose name contains this ("" = all)
  std::string out_prefix;      ///< writes <prefix>.csv, .json, .svg ("" = no files)
  int repeats = 20;            ///< timed runs per case (median reported)
  bool small_sweep = true;     ///< also the small-shape launch-overhead sweep
  bool large = true;           ///< the large shapes (>= 256 MiB inputs)
  /// The schedule of every case, as `mxjit explore` prints it ("tune(...)"); "" = each kernel's
  /// default, or the schedule `explore` stored for it. For profiling one plan (a field a case's
  /// kernel kind does not take is an error naming it: pick the cases with --filter).
  std::string schedule;
  /// Time each launch alone, its events around an idle stream, so the host's launch latency is in
  /// every time (the method before 2026-11-28; the small sweep always is). Otherwise the timed
  /// launches are queued back to back behind a head start: the GPU's time per launch.
  bool synced = false;
};

/// One measured row. Interleaved pairs (a cast against its baseline, launched alternately in
/// one loop so that clock and memory drift hit both alike) also carry the baseline's median and
/// the median over rounds of this case's time relative to it.
struct BenchRow {
  std::string name, shape;
  double us = 0, gbps = 0, pct_copy = 0;
  double bytes = 0;
  bool checked = false;
  double base_us = 0;    ///< pairs: the baseline's median time (0: not a pair)
  double vs_base_pct = 0;  ///< pairs: median over rounds of (this / baseline - 1), in percent
};

/// Median microseconds of `k` on a row-major random input of `shape` (rotating buffers, events,
/// launches queued back to back unless `synced`: BenchOptions::synced), and the bytes it moves;
/// checks the kernel against the reference on a small shape first (`checked`).
struct Timing {
  double us = 0, bytes = 0;
  bool checked = false;
};
Timing time_kernel(const mxjit::Kernel& k, const std::vector<int64_t>& shape, int repeats = 20, bool synced = false);

/// The device-to-device copy bandwidth in GB/s (read + write), 2 GiB copies, median.
double copy_bandwidth();

/// Runs the benchmark on GPU 0; returns the rows (the first is the copy). Throws CudaError
/// without a GPU.
std::vector<BenchRow> run_bench(const BenchOptions& options);

}  // namespace mxjit::bench
