// runqlat's loader (runqlat.bpf.c): run-queue latency per thread and in total, off-CPU time.
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

class Runqlat final : public Probe {
 public:
  Runqlat(SkeletonPtr<runqlat_bpf> skel, bool per_thread) : _skel(std::move(skel)), _per_thread(per_thread) {}

  ProbeData collect() override {
    ProbeData out;
    out.histograms.push_back({source, "", {}});  // the total first, also when empty
    for (auto& e : drain_percpu<runqlat_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      stats::HistogramData h = merge_cpus(e.cpus);
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
    return out;
  }

 private:
  SkeletonPtr<runqlat_bpf> _skel;
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
