// `mxjit layout draw`: draws a layout to SVG (dsl/layout_svg.hpp): a grid of the logical tensor,
// each cell labelled with its storage offset, atoms outlined, padding hatched, and the storage
// order as a strip.
//
//   mxjit layout draw --layout blocked128x4 --shape 130,7 --out blocked.svg
//   mxjit layout draw --layout col_major --shape 4,6 --out col.svg
//   mxjit layout draw --layout "grouped_blocked128x4(0,offs)" --shape 135,4 --groups 130,130,135 --out g.svg
//   mxjit layout draw --layout "modes(*,c/4,r,c%4).align(r,4).pack(4)" --shape 10,9 --out packed.svg
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dsl/errors.hpp"
#include "dsl/layout.hpp"
#include "dsl/layout_svg.hpp"
#include "tools/mxjit/registry.hpp"
#include "tools/mxjit/tool_util.hpp"

namespace mxjit::tool {
namespace {

struct LayoutCommand {
  CLI::App* draw = nullptr;
  std::string layout, shape, groups, out;
  int rows_axis = -1, cols_axis = -1, cell = 30;
  bool no_strip = false;
};

/// "130,7" -> {130, 7}; UsageError naming `flag` for anything else.
std::vector<int64_t> parse_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> v;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      size_t used = 0;
      const long long n = std::stoll(item, &used);
      if (used != item.size() || n < 0) throw std::invalid_argument(item);
      v.push_back(n);
    } catch (const std::exception&) {
      throw UsageError(fmt::format("{} '{}': '{}' is not a non-negative integer (expected e.g. 130,7)", flag, text, item));
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

int run_draw(const LayoutCommand& c) {
  const Layout layout = Layout::parse(c.layout);
  const std::vector<int64_t> shape = parse_list("--shape", c.shape);
  DrawOptions o;
  o.rows_axis = c.rows_axis;
  o.cols_axis = c.cols_axis;
  o.cell = c.cell;
  o.storage_strip = !c.no_strip;
  if (!c.groups.empty()) {
    if (!layout.grouped())
      throw UsageError(fmt::format("--groups: layout {} has no groups; --groups takes the group ends of a "
                                   "grouped_blocked128x4(axis,offsets) layout", layout.str()));
    o.group_ends = parse_list("--groups", c.groups);
  }
  const std::string svg = draw_svg(layout, shape, o);
  write_output_file(c.out, svg, fmt::format("--out '{}'", c.out));
  fmt::print("wrote {} ({} of [{}], {} bytes of SVG)\n", c.out, layout.str(), c.shape, svg.size());
  return kExitOk;
}

Action setup(CLI::App& app) {
  auto c = std::make_shared<LayoutCommand>();
  app.require_subcommand(1);
  c->draw = app.add_subcommand("draw", "draw a layout to SVG: storage offset of every cell, atoms, padding");
  c->draw->add_option("--layout", c->layout,
                      "row_major, col_major, expert_col_major, perm(a,b,...), blocked128x4, blocked8x4, "
                      "grouped_blocked128x4(axis,offsets)")
      ->required();
  c->draw->add_option("--shape", c->shape, "extents, comma separated, e.g. 130,7")->required();
  c->draw->add_option("--rows-axis", c->rows_axis, "axis drawn downwards (default: rank-2)");
  c->draw->add_option("--cols-axis", c->cols_axis, "axis drawn across (default: rank-1)");
  c->draw->add_option("--groups", c->groups, "grouped layouts: group ends along the grouped axis, e.g. 130,130,135");
  c->draw->add_option("--cell", c->cell, "cell size in pixels (default 30)")->check(CLI::Range(8, 256));
  c->draw->add_flag("--no-strip", c->no_strip, "leave out the storage order strip");
  c->draw->add_option("--out", c->out, "SVG file to write")->required();
  return [c] { return run_draw(*c); };
}

const bool kRegistered = register_command({"layout", "draw layouts (where each element and scale lands)", setup});

}  // namespace
}  // namespace mxjit::tool
