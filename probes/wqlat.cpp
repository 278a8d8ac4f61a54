// wqlat's loader (wqlat.bpf.c): kernel workqueue latency per workqueue, optionally only one.
#include <bpf/libbpf.h>

#include <cstring>

#include "probes/bpf_maps.hpp"
#include "probes/loaders.hpp"
#include "probes/skeleton.hpp"
#include "probes/wqlat.h"
#include "wqlat.skel.h"

namespace probes {

namespace {

constexpr const char* source = "wqlat";

class Wqlat final : public Probe {
 public:
  Wqlat(SkeletonPtr<wqlat_bpf> skel, bool per_wq) : _skel(std::move(skel)), _per_wq(per_wq) {}

  ProbeData collect() override {
    ProbeData out;
    out.histograms.push_back({source, "", {}});
    for (auto& e : drain_percpu<wqlat_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      stats::HistogramData h = merge_cpus(e.cpus);
      out.histograms.front().hist.merge(h);
      if (!_per_wq) continue;
      e.key.wq[sizeof e.key.wq - 1] = '\0';
      out.histograms.push_back({source, labels({{"wq", e.key.wq}}), std::move(h)});
    }
    if (uint64_t n = _missed.take(_skel->obj)) out.counters.push_back({"missed_events", "", n});
    return out;
  }

 private:
  SkeletonPtr<wqlat_bpf> _skel;
  MissedEvents _missed;
  bool _per_wq;
};

}  // namespace

std::unique_ptr<Probe> load_wqlat(const ProbeOptions& options, std::string& error) {
  if (options.filter.size() >= WQLAT_NAME_LEN) {
    error = std::string(source) + ": workqueue names are shorter than " + std::to_string(WQLAT_NAME_LEN) +
            " characters, got \"" + options.filter + "\"";
    return nullptr;
  }
  auto skel = open_load_attach(source, NVMT_SKELETON_OPS(wqlat), [&](wqlat_bpf& s) {
    s.rodata->targ_tgid = static_cast<__u32>(options.tgid);  // ProbeSet leaves it 0: not per_process
    s.rodata->per_wq = options.per_key;
    s.rodata->filter_wq = !options.filter.empty();
    std::memcpy(const_cast<char*>(s.rodata->targ_wq), options.filter.data(), options.filter.size());
  }, error);
  if (!skel) return nullptr;
  return std::make_unique<Wqlat>(std::move(skel), options.per_key);
}

}  // namespace probes
