#include "codegen/schedule.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <set>
#include <string_view>

#include "dsl/errors.hpp"

namespace mxjit {
namespace {

struct IntField {
  const char* name;
  int Schedule::* member;
  int unset;
};
constexpr std::array<IntField, 10> kFields = {{{"tile_rows", &Schedule::tile_rows, 0},
                                               {"tile_cols", &Schedule::tile_cols, 0},
                                               {"threads", &Schedule::threads, 0},
                                               {"ctas_per_sm", &Schedule::ctas_per_sm, 0},
                                               {"hoist_loads", &Schedule::hoist_loads, -1},
                                               {"rows_per_thread", &Schedule::rows_per_thread, 0},
                                               {"chunks_per_thread", &Schedule::chunks_per_thread, 0},
                                               {"rows_in_flight", &Schedule::rows_in_flight, 0},
                                               {"cluster", &Schedule::cluster, 0},
                                               {"stages", &Schedule::stages, 0}}};
constexpr std::array<KernelKind, 6> kKinds = {KernelKind::automatic, KernelKind::direct, KernelKind::tiled, KernelKind::columns,
                                              KernelKind::jagged,    KernelKind::rows};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string field_list() {
  std::string s = "kernel";
  for (const IntField& f : kFields) s += fmt::format(", {}", f.name);
  return s;
}

}  // namespace

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::direct: return "direct";
    case KernelKind::tiled: return "tiled";
    case KernelKind::columns: return "columns";
    case KernelKind::jagged: return "jagged";
    case KernelKind::rows: return "rows";
    case KernelKind::automatic: break;
  }
  return "automatic";
}

std::string Schedule::str() const {
  std::string s;
  if (kernel != KernelKind::automatic) s = fmt::format("kernel={}", kernel_kind_name(kernel));
  for (const IntField& f : kFields)
    if (this->*f.member != f.unset) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", f.name, this->*f.member);
  return "tune(" + s + ")";
}

Schedule Schedule::parse(const std::string& text) {
  const std::string_view t = trim(text);
  auto bad = [&](const std::string& why) {
    return UsageError(fmt::format("schedule '{}': {}; expected tune(field=value, ...) with fields {}", text, why, field_list()));
  };
  if (!t.starts_with("tune(") || !t.ends_with(")")) throw bad("not of the form tune(...)");
  const std::string_view body = trim(t.substr(5, t.size() - 6));
  Schedule s;
  if (body.empty()) return s;
  if (std::isdigit(static_cast<unsigned char>(body.front())) || body.front() == '-')
    throw bad("the positional form of generator 23 and older is not read any more (its 'unroll' meant two things); name the fields");
  std::set<std::string, std::less<>> seen;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    if (comma == std::string_view::npos) comma = body.size();
    const std::string_view item = trim(body.substr(pos, comma - pos));
    pos = comma + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw bad(fmt::format("'{}' is not field=value", item));
    const std::string_view name = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (!seen.emplace(name).second) throw bad(fmt::format("field '{}' given twice", name));
    if (name == "kernel") {
      bool found = false;
      for (KernelKind k : kKinds)
        if (value == kernel_kind_name(k)) s.kernel = k, found = true;
      if (!found) throw bad(fmt::format("kernel '{}' is none of automatic, direct, tiled, columns, jagged", value));
      continue;
    }
    const IntField* f = nullptr;
    for (const IntField& c : kFields)
      if (name == c.name) f = &c;
    if (!f) throw bad(fmt::format("unknown field '{}'", name));
    int v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < 0 || (f->member == &Schedule::hoist_loads && v > 1))
      throw bad(fmt::format("{}={} is not {}", name, value, f->member == &Schedule::hoist_loads ? "0 or 1" : "a non-negative integer"));
    s.*(f->member) = v;
  }
  return s;
}

}  // namespace mxjit
