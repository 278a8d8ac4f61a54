// socklat's loader (socklat.bpf.c): socket syscall latency and counts, TCP retransmits.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>

#include "probes/bpf_maps.hpp"
#include "probes/loaders.hpp"
#include "probes/skeleton.hpp"
#include "probes/socklat.h"
#include "socklat.skel.h"

namespace probes {

namespace {

constexpr const char* source = "socklat";

struct Syscall {
  long nr;
  const char* name;
};
// What the engine's queues call (epoll: recv, sendmsg; io_uring: io_uring_enter) and what other
// servers traced with it use.
constexpr Syscall syscalls[] = {
    {SYS_recvfrom, "recvfrom"}, {SYS_recvmsg, "recvmsg"}, {SYS_sendto, "sendto"},
    {SYS_sendmsg, "sendmsg"},   {SYS_readv, "readv"},     {SYS_writev, "writev"},
    {SYS_read, "read"},         {SYS_write, "write"},     {SYS_io_uring_enter, "io_uring_enter"},
};
static_assert(std::size(syscalls) <= SOCKLAT_SLOTS);

class Socklat final : public Probe {
 public:
  explicit Socklat(SkeletonPtr<socklat_bpf> skel) : _skel(std::move(skel)) {}

  ProbeData collect() override {
    ProbeData out;
    for (auto& e : drain_percpu<socklat_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      if (e.key.slot >= std::size(syscalls)) continue;
      out.histograms.push_back({source, labels({{"syscall", syscalls[e.key.slot].name}}), merge_cpus(e.cpus)});
    }
    // Every call, timed or not (socklat.bpf.c times a sample).
    for (uint32_t slot = 0; slot < std::size(syscalls); ++slot) {
      uint64_t calls = 0;
      for (uint64_t n : take_percpu_array<uint64_t>(bpf_map__fd(_skel->maps.counts), slot)) calls += n;
      if (calls) out.counters.push_back({"syscall_count", labels({{"syscall", syscalls[slot].name}}), calls});
    }
    uint64_t retransmits = 0;
    for (uint64_t n : take_percpu_array<uint64_t>(bpf_map__fd(_skel->maps.retransmits), 0)) retransmits += n;
    out.counters.push_back({"tcp_retransmits", "", retransmits});
    if (uint64_t n = _missed.take(_skel->obj)) out.counters.push_back({"missed_events", "", n});
    return out;
  }

 private:
  SkeletonPtr<socklat_bpf> _skel;
  MissedEvents _missed;
};

}  // namespace

std::unique_ptr<Probe> load_socklat(const ProbeOptions& options, std::string& error) {
  auto skel = open_load_attach(source, NVMT_SKELETON_OPS(socklat), [&](socklat_bpf& s) {
    s.rodata->targ_tgid = static_cast<__u32>(options.tgid);
    s.rodata->time_mask = time_mask(options);
  }, error);
  if (!skel) return nullptr;
  for (uint32_t slot = 0; slot < std::size(syscalls); ++slot) {
    uint32_t nr = static_cast<uint32_t>(syscalls[slot].nr), value = slot + 1;
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.tracked), &nr, &value, BPF_ANY) != 0) {
      error = bpf_error(std::string(source) + ": syscall table", errno);
      return nullptr;
    }
  }
  return std::make_unique<Socklat>(std::move(skel));
}

}  // namespace probes
