#include "codegen/target.hpp"

#include <cctype>
#include <fmt/format.h>

#include "dsl/errors.hpp"

namespace mxjit {

Target Target::parse(const std::string& arch) {
  auto bad = [&] {
    return UsageError(fmt::format("arch '{}': expected sm_<NN>[a|f] with NN >= 80, e.g. sm_90a or sm_100a", arch));
  };
  if (!arch.starts_with("sm_") || arch.size() < 5) throw bad();
  size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) ++i;
  if (i == 3) throw bad();
  std::string suffix = arch.substr(i);
  if (!(suffix.empty() || suffix == "a" || suffix == "f")) throw bad();
  int cc = std::stoi(arch.substr(3, i - 3));
  if (cc < 80) throw bad();
  return Target{arch};
}

int Target::sm() const {
  size_t i = 3;
  while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i]))) ++i;
  return std::stoi(arch.substr(3, i - 3));
}

int Target::smem_per_sm() const {
  const int cc = sm();
  if (cc == 80 || cc == 87) return 164 * 1024;
  if (cc == 90 || (cc >= 100 && cc < 120)) return 228 * 1024;
  return 100 * 1024;  // sm_86, sm_89, sm_120 and later consumer parts
}

int Target::max_threads_per_sm() const {
  const int cc = sm();
  return cc == 86 || cc == 89 || cc >= 120 ? 1536 : 2048;
}

int Target::max_ctas_per_sm() const {
  const int cc = sm();
  return cc == 86 ? 16 : cc == 89 ? 24 : 32;
}

int Target::max_cluster() const {
  const int cc = sm();
  return cc < 90 ? 1 : cc < 120 ? 16 : 8;
}

bool Target::arch_specific() const { return arch.ends_with("a") || arch.ends_with("f"); }

}  // namespace mxjit
