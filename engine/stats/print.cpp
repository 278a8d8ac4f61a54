#include "engine/stats/print.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <vector>

#include "engine/stats/histogram_layout.hpp"

namespace stats {

namespace hl = histogram_layout;

namespace {

constexpr int stars_max = 40;      // libbpf-tools' width of the distribution column
constexpr size_t wide_rows = 32;   // beyond this row index, wider labels and half the stars
constexpr double default_percentiles[] = {50.0, 99.0, 99.9};

uint64_t unit_ns(Unit unit) {
  switch (unit) {
    case Unit::nsecs: return 1;
    case Unit::usecs: return 1'000;
    case Unit::msecs: return 1'000'000;
  }
  return 1;
}

// bcc's log2l slot: 0 and 1 share row 0, then row i holds [2^i, 2^(i+1)).
size_t row_of(uint64_t v) { return v < 2 ? 0 : static_cast<size_t>(std::bit_width(v)) - 1; }

}  // namespace

std::vector<uint64_t> log2_rows(const HistogramData& h, Unit unit) {
  std::vector<uint64_t> rows(64, 0);
  uint64_t div = unit_ns(unit);
  for (size_t i = 0; i < h.counts.size(); ++i) {
    if (h.counts[i] == 0) continue;
    uint64_t mid = hl::lower_bound(i) + (hl::width(i) - 1) / 2;
    rows[row_of(mid / div)] += h.counts[i];
  }
  return rows;
}

std::pair<uint64_t, uint64_t> log2_row_bounds(size_t row) {
  uint64_t low = (uint64_t{1} << (row + 1)) >> 1, high = (uint64_t{1} << (row + 1)) - 1;
  if (low == high) low -= 1;
  return {low, high};
}

namespace {

std::string stars(uint64_t val, uint64_t val_max, int width) {
  int n = static_cast<int>(std::min(val, val_max) * static_cast<uint64_t>(width) / val_max);
  std::string s(static_cast<size_t>(n), '*');
  s.append(static_cast<size_t>(width - n), ' ');
  if (val > val_max) s += '+';
  return s;
}

}  // namespace

std::optional<Unit> parse_unit(std::string_view name) {
  if (name == "nsecs" || name == "ns") return Unit::nsecs;
  if (name == "usecs" || name == "us") return Unit::usecs;
  if (name == "msecs" || name == "ms") return Unit::msecs;
  return std::nullopt;
}

const char* unit_name(Unit unit) {
  switch (unit) {
    case Unit::nsecs: return "nsecs";
    case Unit::usecs: return "usecs";
    case Unit::msecs: return "msecs";
  }
  return "?";
}

std::string log2_hist(const HistogramData& h, Unit unit, bool strip_leading_zero) {
  if (h.count == 0 || h.counts.empty()) return {};
  std::vector<uint64_t> rows = log2_rows(h, unit);
  size_t idx_min = rows.size(), idx_max = 0;
  uint64_t val_max = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == 0) continue;
    idx_min = std::min(idx_min, i);
    idx_max = i;
    val_max = std::max(val_max, rows[i]);
  }
  bool wide = idx_max > wide_rows;
  int label = wide ? 20 : 10;
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%*s%-*s : count    distribution\n", wide ? 15 : 5, "",
                wide ? 29 : 19, unit_name(unit));
  out += line;
  for (size_t i = strip_leading_zero ? idx_min : 0; i <= idx_max; ++i) {
    const auto [low, high] = log2_row_bounds(i);
    std::snprintf(line, sizeof line, "%*llu -> %-*llu : %-8llu |", label, static_cast<unsigned long long>(low), label,
                  static_cast<unsigned long long>(high),
                  static_cast<unsigned long long>(rows[i]));
    out += line;
    out += stars(rows[i], val_max, wide ? stars_max / 2 : stars_max);
    out += "|\n";
  }
  return out;
}

std::string format_duration(double ns) {
  static constexpr struct {
    double scale;
    const char* suffix;
  } units[] = {{1.0, "ns"}, {1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
  size_t u = 0;
  // Switch unit where three significant digits would round up to 1000 of the smaller one.
  while (u + 1 < std::size(units) && ns >= 999.5 * units[u].scale) ++u;
  double v = ns / units[u].scale;
  int decimals = u == 0 ? 0 : v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v, units[u].suffix);
  return buf;
}

std::string percentile_line(const HistogramData& h, std::span<const double> percentiles) {
  bool none = h.count == 0 || h.counts.empty();
  std::string out;
  char label[32];
  for (double p : percentiles) {
    std::snprintf(label, sizeof label, "p%g ", p);
    out += label;
    out += none ? "-" : format_duration(h.percentile(p));
    out += ' ';
  }
  out += "max ";
  out += none ? "-" : format_duration(static_cast<double>(h.max_ns));
  return out;
}

std::string percentile_line(const HistogramData& h) { return percentile_line(h, default_percentiles); }

}  // namespace stats
