#include "tools/mxjit/registry.hpp"

#include <algorithm>

namespace mxjit::tool {
namespace {

/// Function-local so that registration from other files' static initialisers is order-safe.
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

}  // namespace

bool register_command(Command cmd) {
  registry().push_back(std::move(cmd));
  return true;
}

std::vector<Command> registered_commands() {
  std::vector<Command> out = registry();
  std::sort(out.begin(), out.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  return out;
}

}  // namespace mxjit::tool
