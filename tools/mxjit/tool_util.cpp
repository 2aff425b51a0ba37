#include "tools/mxjit/tool_util.hpp"

#include <cstdio>
#include <string>

namespace mxjit::tool {

void print_error(std::string_view message) {
  std::string text = "mxjit: error: ";
  text += message;
  if (text.empty() || text.back() != '\n') text += '\n';
  std::fputs(text.c_str(), stderr);
}

void print_notice(std::string_view message) {
  std::string text = "mxjit: note: ";
  text += message;
  text += '\n';
  std::fputs(text.c_str(), stderr);
}

}  // namespace mxjit::tool
