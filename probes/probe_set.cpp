#include "probes/probe_set.hpp"

#include "probes/bpf_support.hpp"
#include "probes/probe_catalog.hpp"

namespace probes {

ProbeSet::ProbeSet(int tgid) : _tgid(tgid) {}

ProbeSet::~ProbeSet() { stop_all(); }

ProbeOptions ProbeSet::options_for(const std::string& name, const std::string& filter) const {
  ProbeOptions o;
  const ProbeKind* kind = find_probe_kind(name);
  o.tgid = kind && kind->per_process ? _tgid : 0;
  o.filter = filter;
  o.per_key = true;
  if (_backing_paths && filter.empty()) o.backing_paths = _backing_paths();
  return o;
}

std::vector<ProbeStatus> ProbeSet::list() {
  std::lock_guard lock(_mu);
  const std::string missing = missing_for_tracing();
  std::vector<ProbeStatus> out;
  for (const ProbeKind& k : probe_kinds()) {
    ProbeStatus st{k.name, k.summary};
    auto run = _running.find(k.name);
    st.running = run != _running.end();
    if (st.running) {
      st.available = true;
      st.filter = run->second.filter;
    } else if (!missing.empty()) {
      st.reason = missing;
    } else {
      if (!_checked[k.name]) {
        std::string error;
        if (!k.load(options_for(k.name, {}), error)) _unavailable[k.name] = error;
        _checked[k.name] = true;
      }
      auto bad = _unavailable.find(k.name);
      if (bad != _unavailable.end()) st.reason = bad->second;
    }
    st.available = st.running || st.reason.empty();
    out.push_back(std::move(st));
  }
  return out;
}

std::string ProbeSet::start(const std::string& name, const std::string& filter) {
  const ProbeKind* kind = find_probe_kind(name);
  if (kind == nullptr) return "unknown probe \"" + name + "\" (probes: " + probe_names() + ")";
  if (!filter.empty() && kind->filter_help == nullptr) return "probe " + name + " takes no filter";
  std::lock_guard lock(_mu);
  auto it = _running.find(name);
  if (it != _running.end() && it->second.filter == filter) return {};
  std::string error;
  auto probe = kind->load(options_for(name, filter), error);
  if (!probe) return error;
  _unavailable.erase(name);
  _checked[name] = true;
  _running[name] = Running{std::move(probe), filter};  // replaces one with another filter
  return {};
}

std::string ProbeSet::stop(const std::string& name) {
  if (find_probe_kind(name) == nullptr) return "unknown probe \"" + name + "\" (probes: " + probe_names() + ")";
  std::unique_ptr<Probe> gone;
  {
    std::lock_guard lock(_mu);
    auto it = _running.find(name);
    if (it == _running.end()) return {};
    gone = std::move(it->second.probe);
    _running.erase(it);
  }
  return {};  // gone detaches here, outside the lock
}

void ProbeSet::stop_all() {
  std::map<std::string, Running> gone;
  std::lock_guard lock(_mu);
  gone.swap(_running);
}

std::vector<std::string> ProbeSet::running() const {
  std::lock_guard lock(_mu);
  std::vector<std::string> out;
  for (const auto& [name, r] : _running) out.push_back(name);
  return out;
}

void ProbeSet::collect_into(stats::Snapshot& s) {
  std::lock_guard lock(_mu);
  for (auto& [name, r] : _running) {
    ProbeData d = r.probe->collect();
    for (auto& h : d.histograms) s.probes.push_back(std::move(h));
    for (auto& c : d.counters) s.probe_counters.push_back(std::move(c));
  }
}

}  // namespace probes
