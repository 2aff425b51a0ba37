// The `mxjit` command-line tool: builds a CLI11 app from the registered subcommands, runs the one
// asked for, and turns every error into one `mxjit: error: ...` line and an exit status.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <new>
#include <string>

#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace {

using mxjit::tool::kExitFailure;
using mxjit::tool::kExitUsage;

/// Runs `action`, mapping every exception to a message on stderr and an exit status.
int run_guarded(const mxjit::tool::Action& action) {
  try {
    return action();
  } catch (const mxjit::UsageError& e) {
    mxjit::tool::print_error(e.what());
    return kExitUsage;
  } catch (const mxjit::CompileError& e) {
    mxjit::tool::print_error(e.what());
    std::fprintf(stderr, "NVRTC options: %s\nNVRTC log:\n%s\n", e.options().c_str(), e.log().c_str());
    return kExitFailure;
  } catch (const mxjit::Error& e) {
    mxjit::tool::print_error(e.what());
    return kExitFailure;
  } catch (const std::bad_alloc&) {
    mxjit::tool::print_error("out of memory");
    return kExitFailure;
  } catch (const std::exception& e) {
    mxjit::tool::print_error(fmt::format("internal error: {}", e.what()));
    return kExitFailure;
  } catch (...) {
    mxjit::tool::print_error("internal error: unknown exception");
    return kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mxjit: declare, run, compile and cache MX (OCP microscaling) casts", "mxjit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mxjit 0.1.0");
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("mxjit: error: {} (run with --help for usage)\n", e.what());
  });
  std::map<const CLI::App*, mxjit::tool::Action> actions;
  try {
    for (const mxjit::tool::Command& cmd : mxjit::tool::registered_commands()) {
      CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
      actions[sub] = cmd.setup(*sub);
    }
  } catch (const std::exception& e) {
    mxjit::tool::print_error(fmt::format("internal error while setting up the commands: {}", e.what()));
    return kExitFailure;
  }
  // CLI11 reports an unknown first word as "A subcommand is required"; name it instead.
  const auto known_command = [&](const std::string& word) {
    for (const auto& [sub, action] : actions)
      if (sub->check_name(word)) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !known_command(argv[1])) {
    std::string known;
    for (const mxjit::tool::Command& cmd : mxjit::tool::registered_commands())
      known += (known.empty() ? "" : ", ") + cmd.name;
    mxjit::tool::print_error(fmt::format("unknown command '{}' (commands: {})", argv[1], known));
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  for (const CLI::App* sub : app.get_subcommands())
    if (auto it = actions.find(sub); it != actions.end()) return run_guarded(it->second);
  mxjit::tool::print_error("no command given (run with --help)");
  return kExitUsage;
}
