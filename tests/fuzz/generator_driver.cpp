// The generator fuzzer as a seeded, deterministic driver (issue 36, issue 33), run by ctest:
//
//   mxjit_fuzz_generator [--corpus DIR]... [--seed S] [--cases N] [--seconds T] [--save DIR] [--verbose] [FILE]...
//
// replays every file of each corpus DIR and each FILE (the bytes of one case), then cases from
// seeds S, S+1, ... (256 bytes each, splitmix64) until N cases or until T seconds have passed
// since it started (the corpus counts; one case takes about 1-3 s, mostly NVRTC). A defect prints the
// case and writes its bytes to defect-<seed>.bin (in --save DIR, else here), exit 1. --save also
// keeps the bytes of the first case of each new outcome as DIR/<seed>.bin (a corpus to commit).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "generator_check.hpp"

namespace fs = std::filesystem;
using mxjit::fuzz::Stats;

namespace {

std::vector<uint8_t> bytes_of_seed(uint64_t seed) {
  std::vector<uint8_t> b(256);
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 36;
  for (size_t i = 0; i < b.size(); i += 8) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (size_t k = 0; k < 8; ++k) b[i + k] = uint8_t(z >> (8 * k));
  }
  return b;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

/// An outcome's signature: what changed in the stats (a new refusal, a backend's first match, ...).
std::string signature(const Stats& before, const Stats& after) {
  std::string s = fmt::format("{}{}{}{}{}{}", after.built - before.built, after.compiled - before.compiled,
                              after.reference_ran - before.reference_ran, after.cpu_matched - before.cpu_matched,
                              after.cpu_refused - before.cpu_refused, after.too_big - before.too_big);
  for (const auto& [what, n] : after.refusals) {
    auto it = before.refusals.find(what);
    if (it == before.refusals.end() || it->second != n) s += "|" + what;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  Stats stats;
  uint64_t seed = 1;
  int64_t cases = -1;
  double seconds = 60;
  fs::path save;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--corpus") {
      const fs::path dir = next();
      std::vector<fs::path> in;
      for (const auto& e : fs::directory_iterator(dir)) in.push_back(e.path());
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else if (a == "--seed") seed = std::stoull(next());
    else if (a == "--cases") cases = std::stoll(next());
    else if (a == "--seconds") seconds = std::stod(next());
    else if (a == "--save") save = next();
    else if (a == "--verbose") verbose = true;
    else if (a == "--echo") stats.echo = true;
    else files.push_back(a);
  }
  if (!save.empty()) fs::create_directories(save);
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const auto run = [&](const std::vector<uint8_t>& b, const std::string& name) {
    try {
      mxjit::fuzz::check_case(b.data(), b.size(), stats);
      return true;
    } catch (const mxjit::fuzz::Defect& d) {
      const fs::path out = (save.empty() ? fs::path(".") : save) / fmt::format("defect-{}.bin", name);
      write_bytes(out, b);
      std::fprintf(stderr, "generator fuzzer: DEFECT in case %s (bytes: %s)\n%s\n", name.c_str(), out.c_str(), d.what());
      return false;
    }
  };
  int replayed = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
    if (!run(b, f.filename().string())) return 1;
    ++replayed;
  }
  std::set<std::string> seen;
  int64_t random = 0;
  for (uint64_t s = seed; (cases < 0 || random < cases) && elapsed() < seconds; ++s, ++random) {
    const std::vector<uint8_t> b = bytes_of_seed(s);
    const Stats before = stats;
    if (!run(b, std::to_string(s))) return 1;
    if (verbose) std::printf("%llu: %s => %s\n", static_cast<unsigned long long>(s), stats.last_recipe.c_str(),
                             signature(before, stats).c_str());
    if (!save.empty() && seen.insert(signature(before, stats)).second) write_bytes(save / fmt::format("{}.bin", s), b);
  }
  std::printf("generator fuzzer: %d corpus cases and %lld seeded cases (seeds %llu..) in %.0f s, no defect\n%s", replayed,
              static_cast<long long>(random), static_cast<unsigned long long>(seed), elapsed(),
              mxjit::fuzz::summary(stats).c_str());
  return 0;
}
