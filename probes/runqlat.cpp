// runqlat's loader (runqlat.bpf.c): run-queue wait as the scheduler accounts it per thread and in
// total, the wall-clock wakeup -> on CPU time in total, off-CPU time.
#include <bpf/libbpf.h>

#include <fstream>

#include "probes/bpf_maps.hpp"
#include "probes/loaders.hpp"
#include "probes/runqlat.h"
#include "probes/skeleton.hpp"
#include "runqlat.skel.h"

namespace probes {

namespace {

constexpr const char* source = "runqlat";
// The wall-clock histogram's labels (runqlat.bpf.c: sched_wakeup -> sched_switch on bpf_ktime).
constexpr const char* wall_labels = "clock=wall";

class Runqlat final : public Probe {
 public:
  Runqlat(SkeletonPtr<runqlat_bpf> skel, bool per_thread) : _skel(std::move(skel)), _per_thread(per_thread) {}

  ProbeData collect() override {
    ProbeData out;
    out.histograms.push_back({source, "", {}});  // the totals first, also when empty
    out.histograms.push_back({source, wall_labels, {}});
    for (auto& e : drain_percpu<runqlat_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      stats::HistogramData h = merge_cpus(e.cpus);
      if (e.key.wall) {
        out.histograms[1].hist.merge(h);
        continue;
      }
      out.histograms.front().hist.merge(h);
      if (_per_thread) out.histograms.push_back({source, thread_labels(e.key.tid), std::move(h)});
    }
    for (auto& e : drain_percpu<runqlat_key, runqlat_offcpu>(bpf_map__fd(_skel->maps.offcpu))) {
      runqlat_offcpu sum{};
      for (const auto& c : e.cpus) sum.ns += c.ns, sum.switches += c.switches;
      const std::string l = _per_thread ? thread_labels(e.key.tid) : "";
      out.counters.push_back({"offcpu_ns", l, sum.ns});
      out.counters.push_back({"offcpu_switches", l, sum.switches});
    }
    if (uint64_t n = _missed.take(_skel->obj)) out.counters.push_back({"missed_events", "", n});
    return out;
  }

 private:
  SkeletonPtr<runqlat_bpf> _skel;
  MissedEvents _missed;
  bool _per_thread;
};

}  // namespace

std::string thread_labels(uint32_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/comm");
  std::string comm;
  std::getline(in, comm);
  return labels({{"tid", std::to_string(tid)}, {"comm", comm}});
}

std::unique_ptr<Probe> load_runqlat(const ProbeOptions& options, std::string& error) {
  auto skel = open_load_attach(source, NVMT_SKELETON_OPS(runqlat), [&](runqlat_bpf& s) {
    s.rodata->targ_tgid = static_cast<__u32>(options.tgid);
    s.rodata->per_thread = options.per_key;
  }, error);
  if (!skel) return nullptr;
  return std::make_unique<Runqlat>(std::move(skel), options.per_key);
}

}  // namespace probes
