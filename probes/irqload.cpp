// irqload's loader (irqload.bpf.c): hard IRQ and softirq counts and time per CPU, and the
// handlers' duration histograms.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <map>

#include "probes/bpf_maps.hpp"
#include "probes/irqload.h"
#include "probes/loaders.hpp"
#include "probes/skeleton.hpp"
#include "irqload.skel.h"

namespace probes {

namespace {

constexpr const char* source = "irqload";
// The kernel's softirq_to_name[] (include/linux/interrupt.h order).
constexpr const char* softirq_names[] = {"hi", "timer", "net_tx", "net_rx", "block",
                                         "irq_poll", "tasklet", "sched", "hrtimer", "rcu"};

std::string softirq_name(uint32_t vec) {
  return vec < std::size(softirq_names) ? softirq_names[vec] : "vec" + std::to_string(vec);
}

// One (key, CPU)'s events as the counters NAME_count and NAME_ns; nothing for a CPU it did not run on.
void add_count_time(ProbeData& out, const char* name, std::string l, uint64_t count, uint64_t ns) {
  if (count == 0) return;
  out.counters.push_back({std::string(name) + "_count", l, count});
  out.counters.push_back({std::string(name) + "_ns", std::move(l), ns});
}

class Irqload final : public Probe {
 public:
  explicit Irqload(SkeletonPtr<irqload_bpf> skel) : _skel(std::move(skel)) {}

  ProbeData collect() override {
    ProbeData out;
    std::map<uint32_t, std::vector<nvmt_hist>> timed;  // per vector, per CPU
    for (auto& e : drain_percpu<irqload_hist_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      if (e.key.softirq == 0) {
        out.histograms.push_back({source, "kind=hardirq", merge_cpus(e.cpus)});
        continue;
      }
      out.histograms.push_back({source, "kind=softirq,vec=" + softirq_name(e.key.softirq - 1), merge_cpus(e.cpus)});
      timed[e.key.softirq - 1] = std::move(e.cpus);
    }
    // Every softirq is counted; its time per CPU is the timed ones' mean times that count.
    for (uint32_t vec = 0; vec < IRQLOAD_SOFTIRQS; ++vec) {
      std::vector<uint64_t> counts = take_percpu_array<uint64_t>(bpf_map__fd(_skel->maps.softirq_counts), vec);
      for (size_t cpu = 0; cpu < counts.size(); ++cpu) {
        const auto it = timed.find(vec);
        const nvmt_hist* h = it != timed.end() && cpu < it->second.size() ? &it->second[cpu] : nullptr;
        const double mean = h && h->count ? static_cast<double>(h->sum_ns) / static_cast<double>(h->count) : 0.0;
        add_count_time(out, "softirq", "vec=" + softirq_name(vec) + ",cpu=" + std::to_string(cpu), counts[cpu],
                       static_cast<uint64_t>(mean * static_cast<double>(counts[cpu])));
      }
    }
    for (auto& e : drain_percpu<uint32_t, nvmt_count_time>(bpf_map__fd(_skel->maps.hardirqs))) {
      std::string line = labels({{"irq", std::to_string(e.key)}, {"name", irq_name(e.key)}});
      for (size_t cpu = 0; cpu < e.cpus.size(); ++cpu)
        add_count_time(out, "hardirq", line + ",cpu=" + std::to_string(cpu), e.cpus[cpu].count, e.cpus[cpu].ns);
    }
    if (uint64_t n = _missed.take(_skel->obj)) out.counters.push_back({"missed_events", "", n});
    return out;
  }

 private:
  // The handler's name as the BPF side saw it first (cached: IRQ names do not change).
  std::string irq_name(uint32_t irq) {
    auto it = _names.find(irq);
    if (it != _names.end()) return it->second;
    irqload_name n{};
    if (bpf_map_lookup_elem(bpf_map__fd(_skel->maps.irq_names), &irq, &n) != 0) return {};
    n.name[sizeof n.name - 1] = '\0';
    return _names[irq] = n.name;
  }

  SkeletonPtr<irqload_bpf> _skel;
  MissedEvents _missed;
  std::map<uint32_t, std::string> _names;
};

}  // namespace

std::unique_ptr<Probe> load_irqload(const ProbeOptions& options, std::string& error) {
  auto skel = open_load_attach(source, NVMT_SKELETON_OPS(irqload), [&](irqload_bpf& s) {
    s.rodata->time_mask = time_mask(options);
  }, error);
  if (!skel) return nullptr;
  return std::make_unique<Irqload>(std::move(skel));
}

}  // namespace probes
