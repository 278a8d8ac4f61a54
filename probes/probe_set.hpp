#pragma once
// The probes running beside one engine: started and stopped live (control socket, CLI, GUI),
// read once per sampler interval into the engine's snapshot (collect_into is the snapshot
// provider serve installs), so probe data shares the engine's time axis, store and plots.
// Thread-safe: start/stop/list come from the control thread, collect_into from the sampler's.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/stats/snapshot.hpp"
#include "probes/probe.hpp"

namespace probes {

struct ProbeStatus {
  std::string name;
  std::string summary;
  bool available = false;
  std::string reason;     // why not available; "" when it is
  bool running = false;
  std::string filter;     // of the running probe
};

class ProbeSet {
 public:
  // tgid: the process per-process probes measure (the engine's: getpid()).
  explicit ProbeSet(int tgid);
  ~ProbeSet();

  // Availability is found by loading each probe once (then cached): the kernel is the judge.
  std::vector<ProbeStatus> list();
  // "" on success (also when already running with the same filter); else why not.
  std::string start(const std::string& name, const std::string& filter = {});
  // "" on success; "not running" is not an error (idempotent) but unknown names are.
  std::string stop(const std::string& name);
  void stop_all();
  std::vector<std::string> running() const;
  // Where the engine's namespaces live (file paths, block devices), asked at each start: biolat
  // watches those disks unless told otherwise. Set before the control socket opens.
  void set_backing_paths(std::function<std::vector<std::string>()> paths) { _backing_paths = std::move(paths); }

  // Appends every running probe's interval to s (histograms and counters).
  void collect_into(stats::Snapshot& s);

 private:
  struct Running {
    std::unique_ptr<Probe> probe;
    std::string filter;
  };
  ProbeOptions options_for(const std::string& name, const std::string& filter) const;

  int _tgid;
  std::function<std::vector<std::string>()> _backing_paths;
  mutable std::mutex _mu;
  std::map<std::string, Running> _running;
  std::map<std::string, std::string> _unavailable;  // name -> reason, once found
  std::map<std::string, bool> _checked;
};

}  // namespace probes
