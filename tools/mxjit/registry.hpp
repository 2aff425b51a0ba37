#pragma once
/// \file The subcommand registry of the `mxjit` tool. Each subcommand is one file
/// `tools/mxjit/cmd_<name>.cpp` that registers itself:
///
/// ```cpp
/// namespace {
/// mxjit::tool::Action setup(CLI::App& app) {          // app: the subcommand, already named
///   auto opts = std::make_shared<MyOptions>();
///   app.add_option("--out", opts->out, "where to write")->required();
///   return [opts] { return run_my_command(*opts); };  // runs after a successful parse
/// }
/// const bool kRegistered = mxjit::tool::register_command({"name", "one-line summary", setup});
/// }  // namespace
/// ```
///
/// and is added to the `MXJIT_TOOL_COMMANDS` list in tools/CMakeLists.txt (one line). main.cpp
/// builds the CLI11 app from the registry, so it never changes when a command is added.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace mxjit::tool {

/// What a subcommand does once its options are parsed; returns the process exit status.
using Action = std::function<int()>;

/// One registered subcommand.
struct Command {
  std::string name;                         ///< e.g. "cast"
  std::string summary;                      ///< one line for `mxjit --help`
  std::function<Action(CLI::App&)> setup;   ///< adds options to the subcommand, returns its action
};

/// Registers `cmd` (called from a static initialiser); returns true so it can initialise a constant.
bool register_command(Command cmd);

/// Every registered command, sorted by name.
std::vector<Command> registered_commands();

}  // namespace mxjit::tool
