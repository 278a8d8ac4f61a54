#pragma once
// The latency histograms a snapshot carries, as data: a source is a name and a histogram, not
// a widget. The histogram view and the heatmaps show whatever this returns: the engine's own
// histograms, the host's (the app's own load, when given), then those of the eBPF probes
// running beside it (Snapshot::probes).
#include <string>
#include <vector>

#include "engine/stats/histogram_data.hpp"
#include "engine/stats/snapshot.hpp"
#include "ui/models/host_latency.hpp"

namespace ui {

struct HistogramSource {
  std::string name;    // stable key: "read_latency", later "probe:runqlat{cpu=1}"
  std::string title;   // what a human reads: "Read latency"
  std::string help;    // tooltip: what is measured, from where to where
  stats::HistogramData hist;
};

// The engine totals' sources in stats::latency_sources' order (target latency, its stages, the
// engine's own), then the host's reads and writes when host is given ("host_read_latency",
// "host_write_latency"), then each probe histogram of s in its order ("probe:runqlat",
// "probe:runqlat{tid=812,comm=...}").
std::vector<HistogramSource> histogram_sources(const stats::Snapshot& s, const HostInterval* host = nullptr);
// "probe:wqlat" (the probe's total) or "probe:wqlat{wq=nvmet_tcp_wq}".
std::string probe_source_name(const std::string& probe, const std::string& labels);

// Rows of the GUI's log2 view in microseconds (bcc's rows: 0 -> 1, 2 -> 3, ..., 16 -> 31).
inline constexpr size_t log2_rows_shown = 32;
std::vector<uint64_t> log2_us_rows(const stats::HistogramData& h);
// "16 -> 31 us"
std::string log2_row_label(size_t row);

}  // namespace ui
