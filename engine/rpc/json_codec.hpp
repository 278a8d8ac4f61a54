#pragma once
// JSON encodings of the engine's statistics, events and threads, as the control socket sends
// them (README.md "Control socket"), and the one decoder a client needs (ctl's histograms).
// Every duration is in nanoseconds and named *_ns.
#include <nlohmann/json.hpp>

#include "engine/control/engine.hpp"
#include "engine/stats/histogram_data.hpp"
#include "engine/stats/snapshot.hpp"
#include "engine/system/topology.hpp"

namespace control {

// {count, sum_ns, min_ns, max_ns, mean_ns, p50_ns, p90_ns, p99_ns, p99_9_ns}; with buckets,
// also "buckets": [[lower_ns, upper_ns, count], ...] for the non-empty buckets (upper
// exclusive; stats/histogram_layout.hpp).
nlohmann::json histogram_json(const stats::HistogramData& h, bool buckets = false);
// The inverse of histogram_json(h, true) (counts, count, sum, min, max). A histogram sent
// without buckets comes back with empty counts.
stats::HistogramData histogram_from_json(const nlohmann::json& j);

// {seq, time_ns, interval_ns, mode, iops, read_mib_s, write_mib_s, total, queues[], workers[]}.
nlohmann::json snapshot_json(const stats::Snapshot& s, bool buckets = false);
// {seq, time_ns, kind, detail}: detail is the event's JSON object (a string if it is not JSON).
nlohmann::json event_json(const stats::Event& e);
// {tid, name, role, cpus, cpus_allowed}: cpus is what the engine asked for ("all" = any CPU),
// cpus_allowed what the kernel applies now (/proc/self/task/TID/status; null if unreadable).
nlohmann::json thread_json(const engine::ThreadInfo& t);

// The decoders of a remote client (client.hpp): snapshot_json(s, true), event_json and
// thread_json read back. Fields a server did not send keep their defaults.
stats::Snapshot snapshot_from_json(const nlohmann::json& j);
stats::Event event_from_json(const nlohmann::json& j);
engine::ThreadInfo thread_from_json(const nlohmann::json& j);

// {cpus: [{cpu, core, cache, numa, package, cache_level, cache_bytes}], load_error}: the machine
// as hwloc sees it (topology.get).
nlohmann::json topology_json(const sys::Topology& t);
sys::Topology topology_from_json(const nlohmann::json& j);

}  // namespace control
