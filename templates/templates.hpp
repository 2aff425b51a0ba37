#pragma once
/// \file Access to the .cuh snippets of templates/, embedded into the library at build time.
#include <string_view>
#include <vector>

namespace mxjit::detail {

/// One embedded template file: its file name and its text.
struct EmbeddedTemplate {
  const char* name;
  const char* text;
};

extern const EmbeddedTemplate kEmbeddedTemplates[];
extern const int kEmbeddedTemplateCount;

/// The text of templates/<name>; throws std::out_of_range if no such template was embedded.
std::string_view template_text(std::string_view name);

/// Names of all embedded templates.
std::vector<std::string_view> template_names();

}  // namespace mxjit::detail
