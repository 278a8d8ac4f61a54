#pragma once
// Text renderings of a latency histogram for `nvmetune ctl stats --watch` and logs:
// the log2 histogram of bcc/libbpf-tools (wqlat, biolatency) and a one-line percentile summary.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/stats/histogram_data.hpp"

namespace stats {

enum class Unit { nsecs, usecs, msecs };

// "nsecs", "usecs", "msecs" (also "ns", "us", "ms"); nullopt for anything else.
std::optional<Unit> parse_unit(std::string_view name);
const char* unit_name(Unit unit);

// libbpf-tools' print_log2_hist(), byte for byte:
//
//      usecs               : count    distribution
//          0 -> 1          : 0        |                                        |
//          2 -> 3          : 12       |****************************************|
//
// Rows are powers of two of `unit` (row 0 is 0..1); the sub-buckets of h are collapsed into
// them by their midpoint (a sub-bucket never straddles a row in nsecs; in usecs/msecs one may
// straddle a row boundary by less than 6.25 % of its value, and then counts in the row of its
// midpoint). The fullest row gets 40 stars (20 when rows go beyond 32). strip_leading_zero
// starts at the first non-empty row, like bcc's option of that name. Empty h: empty string.
std::string log2_hist(const HistogramData& h, Unit unit, bool strip_leading_zero = false);

// The rows log2_hist prints (64 of them, counts per row) and row i's "low -> high" bounds in
// `unit`: what the GUI's histogram bars and heatmaps show, so they read like the terminal.
std::vector<uint64_t> log2_rows(const HistogramData& h, Unit unit);
std::pair<uint64_t, uint64_t> log2_row_bounds(size_t row);

// "850ns", "12.3us", "4.56ms", "1.20s": three significant digits, the unit chosen by size.
std::string format_duration(double ns);

// "p50 12.3us p99 45.6us p99.9 78.9us max 1.20ms" for the given percentiles; every value
// reads "-" when h is empty, so columns stay aligned in a watch loop.
std::string percentile_line(const HistogramData& h, std::span<const double> percentiles);
std::string percentile_line(const HistogramData& h);  // p50 p99 p99.9 max

}  // namespace stats
