#pragma once
/// \file Small helpers shared by the tool's subcommands: exit statuses and message lines.
#include <string_view>

namespace mxjit::tool {

/// Exit status of a successful command.
inline constexpr int kExitOk = 0;
/// Exit status of a failure that is not the user's mistake (a CUDA error, a damaged cache, ...).
inline constexpr int kExitFailure = 1;
/// Exit status of a user error: bad option values, bad input files, impossible requests.
inline constexpr int kExitUsage = 2;

/// Prints `message` to stderr as `mxjit: error: <first line>`, later lines (a spec's source line
/// and caret) indented as they come.
void print_error(std::string_view message);

/// Prints one `mxjit: note: <message>` line to stderr.
void print_notice(std::string_view message);

}  // namespace mxjit::tool
