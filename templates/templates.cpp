#include "templates/templates.hpp"

#include <stdexcept>
#include <string>

namespace mxjit::detail {

std::string_view template_text(std::string_view name) {
  for (int i = 0; i < kEmbeddedTemplateCount; ++i)
    if (name == kEmbeddedTemplates[i].name) return kEmbeddedTemplates[i].text;
  throw std::out_of_range("mxjit: no embedded template named '" + std::string(name) + "'");
}

std::vector<std::string_view> template_names() {
  std::vector<std::string_view> names;
  for (int i = 0; i < kEmbeddedTemplateCount; ++i) names.push_back(kEmbeddedTemplates[i].name);
  return names;
}

}  // namespace mxjit::detail
