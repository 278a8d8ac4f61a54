// The histogram sources of a snapshot (histogram_sources.hpp).
#include "ui/models/histogram_sources.hpp"

#include "engine/stats/latency_sources.hpp"
#include "engine/stats/print.hpp"
#include "probes/probe_catalog.hpp"

namespace ui {

std::vector<HistogramSource> histogram_sources(const stats::Snapshot& s, const HostInterval* host) {
  std::vector<HistogramSource> out;
  for (const auto& src : stats::latency_sources) out.push_back({src.key, src.title, src.span, s.total.*src.row});
  // The host's view joins here rather than as a ProbeHistogram injected into the snapshot: a
  // snapshot is what the engine's side measured (the store and the control socket carry it,
  // probes' rates are drawn from it), while the host's histograms exist only in this process,
  // for the load it runs. A source list is the one place that puts both side by side.
  if (host) {
    out.push_back({"host_read_latency", "Host (initiator) latency, reads", host_latency_span, host->read});
    out.push_back({"host_write_latency", "Host (initiator) latency, writes", host_latency_span, host->write});
  }
  // The running eBPF probes' histograms: each probe's total, then its labelled ones.
  for (const auto& p : s.probes) {
    const auto* kind = probes::find_probe_kind(p.source);
    std::string help = "eBPF probe " + p.source + (kind ? std::string(": ") + kind->summary : std::string());
    if (p.labels.empty())
      out.push_back({probe_source_name(p.source, ""), p.source + " (eBPF)", std::move(help), p.hist});
    else
      out.push_back({probe_source_name(p.source, p.labels), p.source + " " + p.labels, help + " (" + p.labels + ")", p.hist});
  }
  return out;
}

std::string probe_source_name(const std::string& probe, const std::string& labels) {
  return "probe:" + probe + (labels.empty() ? std::string() : "{" + labels + "}");
}

std::vector<uint64_t> log2_us_rows(const stats::HistogramData& h) {
  auto rows = stats::log2_rows(h, stats::Unit::usecs);
  // Everything beyond the last row shown (over an hour) counts in it.
  for (size_t i = log2_rows_shown; i < rows.size(); ++i) rows[log2_rows_shown - 1] += rows[i];
  rows.resize(log2_rows_shown);
  return rows;
}

std::string log2_row_label(size_t row) {
  const auto [low, high] = stats::log2_row_bounds(row);
  return std::to_string(low) + " -> " + std::to_string(high) + " us";
}

}  // namespace ui
