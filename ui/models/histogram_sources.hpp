#pragma once
// The latency histograms a snapshot carries, as data: a source is a name and a histogram, not
// a widget. The histogram view and the heatmaps show whatever this returns, so a new source
// (the eBPF probes' histograms when stats::Snapshot carries them) is one more loop here.
#include <string>
#include <vector>

#include "engine/stats/histogram_data.hpp"
#include "engine/stats/snapshot.hpp"

namespace ui {

struct HistogramSource {
  std::string name;    // stable key: "read_latency", later "probe:runqlat{cpu=1}"
  std::string title;   // what a human reads: "Read latency"
  std::string help;    // tooltip: what is measured, from where to where
  stats::HistogramData hist;
};

// The engine totals' sources in a fixed order: queue wait, read, write, other, backend.
std::vector<HistogramSource> histogram_sources(const stats::Snapshot& s);

// Rows of the GUI's log2 view in microseconds (bcc's rows: 0 -> 1, 2 -> 3, ..., 16 -> 31).
inline constexpr size_t log2_rows_shown = 32;
std::vector<uint64_t> log2_us_rows(const stats::HistogramData& h);
// "16 -> 31 us"
std::string log2_row_label(size_t row);

}  // namespace ui
