#include "dsl/layout_svg.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "dsl/errors.hpp"
#include "dsl/limits.hpp"

namespace mxjit {
namespace {

/// Fill colour of storage offset `off` of `storage`: blue (first) to red (last).
std::string colour(int64_t off, int64_t storage) {
  const double t = storage > 1 ? double(off) / double(storage - 1) : 0.0;
  return fmt::format("hsl({:.0f},70%,80%)", 240.0 * (1.0 - t));
}

/// SVG text with XML special characters escaped.
std::string escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      default: out += ch;
    }
  }
  return out;
}

/// Everything the drawing needs, resolved once.
struct Scene {
  BoundLayout layout;
  std::vector<int64_t> shape;
  int ra = -1, ca = -1;             // rows / columns axes (ra -1: one row)
  std::vector<int> batch_axes;      // the others, outermost first
  int64_t rows = 1, cols = 1;       // logical extents
  int64_t grid_rows = 1, grid_cols = 1;  // drawn extents (padded)
  int64_t panels = 1, storage = 0;
  std::vector<int64_t> ends;        // grouped: scale-unit group ends
  int64_t atom_r = 1, atom_c = 1;   // the tile the innermost constant modes cover (1 x 1: none)
  int64_t atom = 1;                 // its values, contiguous in storage
  int64_t strip_w = 1;              // values per line of the storage strip

  std::vector<int64_t> index(int64_t b, int64_t r, int64_t c) const {
    std::vector<int64_t> idx(shape.size(), 0);
    for (auto it = batch_axes.rbegin(); it != batch_axes.rend(); ++it) {
      idx[size_t(*it)] = b % shape[size_t(*it)];
      b /= shape[size_t(*it)];
    }
    if (ra >= 0) idx[size_t(ra)] = r;
    idx[size_t(ca)] = c;
    return idx;
  }
  /// Storage offset of a grid cell (padding cells too: the layout's offset over the padded grid).
  int64_t offset(int64_t b, int64_t r, int64_t c) const { return layout.offset(index(b, r, c), shape, ends); }
};

Scene resolve(const Layout& l, std::span<const int64_t> shape_in, const DrawOptions& o) {
  Scene s;
  s.shape.assign(shape_in.begin(), shape_in.end());
  const int rank = int(s.shape.size());
  if (rank == 0) throw UsageError("draw_svg: the shape is empty; give at least one extent");
  for (int64_t e : s.shape)
    if (e < 0) throw UsageError(fmt::format("draw_svg: shape [{}] has a negative extent", fmt::join(s.shape, ",")));
  s.ra = o.rows_axis >= 0 ? o.rows_axis : rank - 2;
  s.ca = o.cols_axis >= 0 ? o.cols_axis : rank - 1;
  if (s.ra >= rank || s.ca >= rank || s.ra == s.ca)
    throw UsageError(fmt::format("draw_svg: rows axis {} and columns axis {} must be two different axes of the "
                                 "rank-{} shape", s.ra, s.ca, rank));
  // A scale layout's rows and columns are the drawn ones.
  try {
    s.layout = l.uses_roles() ? l.bind(rank, s.ra, s.ca) : l.bind(rank);
  } catch (const UsageError& e) {
    throw UsageError(std::string("draw_svg: ") + e.what());
  }
  for (int a = 0; a < rank; ++a)
    if (a != s.ra && a != s.ca) s.batch_axes.push_back(a);
  if (o.cell < 8 || o.cell > 256) throw UsageError(fmt::format("draw_svg: cell size {} must be 8..256 pixels", o.cell));
  // Every count is checked: a drawing past max_cells (or past INT64_MAX) is refused before a cell is drawn.
  const auto too_big = [&] {
    return UsageError(fmt::format("draw_svg: {} of [{}] needs more than max_cells {} cells; draw a smaller shape",
                                  l.str(), fmt::join(s.shape, ","), o.max_cells));
  };
  const auto count = [&](std::optional<int64_t> v) {
    if (!v || *v > o.max_cells) throw too_big();
    return *v;
  };
  s.rows = s.ra >= 0 ? s.shape[size_t(s.ra)] : 1;
  s.cols = s.shape[size_t(s.ca)];
  for (int a : s.batch_axes) s.panels = count(checked_mul(s.panels, s.shape[size_t(a)]));
  s.grid_rows = count(s.ra >= 0 ? checked_round_up(s.rows, s.layout.align[size_t(s.ra)]) : 1);
  s.grid_cols = count(checked_round_up(s.cols, s.layout.align[size_t(s.ca)]));
  if (l.grouped()) {
    const int ga = l.group_axis();
    if (ga != s.ra && ga != s.ca)
      throw UsageError(fmt::format("draw_svg: {} groups axis {}, which is neither the rows axis {} nor the columns "
                                   "axis {}", l.str(), ga, s.ra, s.ca));
    const int64_t extent = s.shape[size_t(ga)];
    s.ends = o.group_ends.empty() ? std::vector<int64_t>{extent} : o.group_ends;
    int64_t prev = 0;
    for (size_t g = 0; g < s.ends.size(); ++g) {
      if (s.ends[g] < prev || s.ends[g] > extent)
        throw UsageError(fmt::format("draw_svg: group end [{}] = {} must be >= the previous end {} and <= {}", g,
                                     s.ends[g], prev, extent));
      prev = s.ends[g];
    }
    try {
      s.storage = count(s.layout.size_bound(s.shape, int64_t(s.ends.size())));  // bounds the groups' sizes
      s.storage = s.layout.group_size(s.shape, s.ends);
    } catch (const UsageError&) {
      throw too_big();  // past the element limit of a tensor
    }
    s.grid_rows = count(s.rows);  // groups pad in storage, not on the grid
    s.grid_cols = count(s.cols);
  } else {
    try {
      s.storage = count(s.layout.size(s.shape));
    } catch (const UsageError&) {
      throw too_big();  // past the element limit of a tensor
    }
  }
  // The atom: the tile of the innermost modes of constant extent, contiguous in storage. The
  // strip's line: the innermost constant modes up to 64 values, or the innermost whole mode.
  const std::vector<int64_t> ext = s.layout.extents(s.shape);
  for (size_t k = s.layout.modes.size(); k-- > 0 && s.layout.modes[k].ext > 0;) {
    const BoundLayout::Mode& m = s.layout.modes[k];
    s.atom *= m.ext;
    if (m.axis == s.ra) s.atom_r *= m.ext;
    if (m.axis == s.ca) s.atom_c *= m.ext;
  }
  if (s.atom <= 1 || s.atom != s.atom_r * s.atom_c || l.grouped()) s.atom = s.atom_r = s.atom_c = 1;
  for (size_t k = s.layout.modes.size(); k-- > 0;) {
    const bool whole = s.layout.modes[k].ext == 0;
    if (whole && s.strip_w == 1) s.strip_w = std::clamp<int64_t>(ext[k], 1, 64);
    if (whole || s.strip_w * ext[k] > 64) break;
    s.strip_w *= ext[k];
  }
  std::optional<int64_t> cells = checked_mul(s.panels, s.grid_rows);
  if (cells) cells = checked_mul(*cells, s.grid_cols);
  if (cells && o.storage_strip) cells = checked_add(*cells, s.storage);
  count(cells);
  return s;
}

}  // namespace

std::string draw_svg(const Layout& layout, std::span<const int64_t> shape, const DrawOptions& o) {
  const Scene s = resolve(layout, shape, o);
  const int cs = o.cell;
  const double font = s.storage > 9999 ? cs * 0.27 : cs * 0.36;
  const int margin = 20, label = cs + 6, head = 64, panel_gap = cs;
  // The strip: one line is a 16-byte line of a 128x4 atom, one 8x4 atom (32 bytes), or one
  // innermost run of a permuted layout (at most 64): Scene::strip_w.
  const int64_t strip_w = s.strip_w;
  const int64_t strip_lines = (s.storage + strip_w - 1) / strip_w;
  const int64_t panel_h = label + s.grid_rows * cs + panel_gap + (s.batch_axes.empty() ? 0 : label);
  const int64_t grid_w = margin + label + s.grid_cols * cs + margin;
  const int64_t strip_x = grid_w + margin + label;
  int64_t width = o.storage_strip ? strip_x + strip_w * cs + margin : grid_w;
  const int64_t height = head + std::max<int64_t>(s.panels * panel_h, o.storage_strip ? label + strip_lines * cs : 0) + margin;
  const std::string title = o.title.empty() ? fmt::format("{} of [{}]: {} elements of storage", layout.str(),
                                                          fmt::join(s.shape, ","), s.storage)
                                            : o.title;
  std::string legend = fmt::format("rows: axis {}, columns: axis {}; cell = storage offset, colour = storage order",
                                   s.ra, s.ca);
  if (s.layout.pads()) legend += "; hatched = padding (zero)";
  if (s.atom > 1) legend += fmt::format("; thick = {}x{} atoms", s.atom_r, s.atom_c);
  if (layout.grouped()) legend += "; red = group boundaries";
  // Monospace glyphs are about 0.6 em wide: room for the title (16 px) and the legend (12 px).
  width = std::max<int64_t>({width, margin * 2 + int64_t(title.size() * 10), margin * 2 + int64_t(double(legend.size()) * 7.3),
                             o.storage_strip ? strip_x - label + 64 * 8 + margin : 0});
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"monospace\">\n"
      "<defs><pattern id=\"pad\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c8c8c8\" stroke-width=\"3\"/></pattern></defs>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\" font-weight=\"bold\">{}</text>\n", margin, escape(title));
  svg += fmt::format("<text x=\"{}\" y=\"44\" font-size=\"12\" fill=\"#444\">{}</text>\n", margin, escape(legend));
  const std::string text_attr = fmt::format("text-anchor=\"middle\" dominant-baseline=\"central\" font-size=\"{:.1f}\"", font);
  // Cells are drawn as groups sharing their attributes: rects, then labels, then outlines.
  std::string rects, labels, outlines, lines;

  for (int64_t b = 0; b < s.panels; ++b) {
    int64_t y0 = head + b * panel_h;
    const int64_t x0 = margin + label;
    if (!s.batch_axes.empty()) {
      std::vector<int64_t> idx = s.index(b, 0, 0);
      std::vector<std::string> parts;
      for (int a : s.batch_axes) parts.push_back(fmt::format("axis {} = {}", a, idx[size_t(a)]));
      svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n", margin, y0 + cs / 2, fmt::join(parts, ", "));
      y0 += label;
    }
    for (int64_t c = 0; c < s.grid_cols; ++c)
      svg += fmt::format("<text x=\"{}\" y=\"{}\" {} fill=\"#666\">{}</text>\n", x0 + c * cs + cs / 2, y0 + label / 2,
                         text_attr, c);
    y0 += label;
    for (int64_t r = 0; r < s.grid_rows; ++r) {
      if (s.ra >= 0)
        svg += fmt::format("<text x=\"{}\" y=\"{}\" {} fill=\"#666\">{}</text>\n", margin + label / 2, y0 + r * cs + cs / 2,
                           text_attr, r);
      for (int64_t c = 0; c < s.grid_cols; ++c) {
        const bool pad = r >= s.rows || c >= s.cols;
        const int64_t off = s.offset(b, r, c);
        const std::string fill = pad ? "url(#pad)" : off < 0 ? "#ffffff" : colour(off, s.storage);
        rects += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", x0 + c * cs,
                             y0 + r * cs, cs, cs, fill);
        labels += fmt::format("<text x=\"{}\" y=\"{}\"{}>{}</text>\n", x0 + c * cs + cs / 2, y0 + r * cs + cs / 2,
                              pad ? " fill=\"#888\"" : "", off < 0 ? "-" : std::to_string(off));
      }
    }
    if (s.atom > 1)  // atoms
      for (int64_t r = 0; r < s.grid_rows; r += s.atom_r)
        for (int64_t c = 0; c < s.grid_cols; c += s.atom_c)
          outlines += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", x0 + c * cs, y0 + r * cs,
                                  s.atom_c * cs, s.atom_r * cs);
    if (layout.grouped()) {  // group boundaries (after each group's last row or column)
      const bool by_rows = layout.group_axis() == s.ra;
      for (size_t g = 0; g < s.ends.size(); ++g) {
        const int64_t e = s.ends[g];
        if (by_rows)
          lines += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d00\" stroke-width=\"3\"/>\n",
                             x0 - 4, y0 + e * cs, x0 + s.grid_cols * cs + 4, y0 + e * cs);
        else
          lines += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d00\" stroke-width=\"3\"/>\n",
                             x0 + e * cs, y0 - 4, x0 + e * cs, y0 + s.grid_rows * cs + 4);
      }
    }
  }

  if (o.storage_strip) {
    const int64_t y0 = head + label;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">storage order: {} elements per line, cell = logical "
                       "index</text>\n",
                       strip_x - label, head + cs / 2, strip_w);
    for (int64_t line = 0; line < strip_lines; ++line)
      svg += fmt::format("<text x=\"{}\" y=\"{}\" {} fill=\"#666\">{}</text>\n", strip_x - label / 2 - 4,
                         y0 + line * cs + cs / 2, text_attr, line * strip_w);
    const double small = std::min(font, cs * 0.27);
    std::string srects, slabels;
    for (int64_t off = 0; off < s.storage; ++off) {
      const int64_t x = strip_x + (off % strip_w) * cs, y = y0 + (off / strip_w) * cs;
      const auto idx = s.layout.index_at(off, s.shape, s.ends);
      std::string what;
      if (idx) {
        what = s.ra >= 0 ? fmt::format("{},{}", (*idx)[size_t(s.ra)], (*idx)[size_t(s.ca)]) : std::to_string((*idx)[size_t(s.ca)]);
      }
      srects += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", x, y, cs, cs,
                            idx ? colour(off, s.storage) : "url(#pad)");
      if (!what.empty()) slabels += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x + cs / 2, y + cs / 2, what);
    }
    rects += srects;
    labels += fmt::format("<g font-size=\"{:.1f}\">\n{}</g>\n", small, slabels);
    // Atom boundaries in storage (every atom values).
    if (s.atom > 1 && s.atom % strip_w == 0) {
      const int64_t atom = s.atom, per = atom / strip_w;
      for (int64_t a = 0; a * atom < s.storage; ++a)
        outlines += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", strip_x, y0 + a * per * cs,
                                strip_w * cs, per * cs);
    }
  }
  // Cells, then their labels, then atom outlines and group boundaries on top.
  svg += fmt::format("<g stroke=\"#999\" stroke-width=\"0.5\">\n{}</g>\n", rects);
  svg += fmt::format("<g {}>\n{}</g>\n", text_attr, labels);
  svg += fmt::format("<g fill=\"none\" stroke=\"#000\" stroke-width=\"2\">\n{}</g>\n", outlines);
  svg += lines;
  svg += "</svg>\n";
  return svg;
}

}  // namespace mxjit
