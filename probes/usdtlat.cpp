// usdtlat's loader (usdtlat.bpf.c): attaches to the engine's USDT points in one process (ours
// by default), so they cost something only while this probe runs.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <climits>

#include "probes/bpf_maps.hpp"
#include "probes/loaders.hpp"
#include "probes/skeleton.hpp"
#include "probes/usdtlat.h"
// bpftool writes the __kconfig extern of libbpf's usdt.bpf.h (LINUX_HAS_BPF_COOKIE) with C's
// _Bool, which g++ takes as an extension and clang++ does not know.
#if defined(__clang__) && !defined(_Bool)
#define _Bool bool
#include "usdtlat.skel.h"
#undef _Bool
#else
#include "usdtlat.skel.h"
#endif

namespace probes {

namespace {

constexpr const char* source = "usdtlat";
constexpr const char* provider = "nvmetune";

class Usdtlat final : public Probe {
 public:
  explicit Usdtlat(SkeletonPtr<usdtlat_bpf> skel) : _skel(std::move(skel)) {}

  ProbeData collect() override {
    ProbeData out;
    for (auto& e : drain_percpu<usdtlat_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      const char* what = e.key.kind == USDTLAT_COMMAND ? "command" : "queue_wait";
      out.histograms.push_back({source, labels({{"point", what}}), merge_cpus(e.cpus)});
    }
    return out;
  }

 private:
  SkeletonPtr<usdtlat_bpf> _skel;
};

// The executable of pid (or of this process), resolved so uprobes find its USDT notes.
std::string executable_of(int pid) {
  std::string link = pid > 0 ? "/proc/" + std::to_string(pid) + "/exe" : "/proc/self/exe";
  char path[PATH_MAX];
  ssize_t n = readlink(link.c_str(), path, sizeof path - 1);
  if (n <= 0) return {};
  path[n] = '\0';
  return path;
}

}  // namespace

std::unique_ptr<Probe> load_usdtlat(const ProbeOptions& options, std::string& error) {
  SkeletonOps<usdtlat_bpf> ops = NVMT_SKELETON_OPS(usdtlat);
  ops.attach = nullptr;  // USDT points need the binary and the process: attached below
  auto skel = open_load_attach(source, ops, [](usdtlat_bpf&) {}, error);
  if (!skel) return nullptr;
  const int pid = options.tgid > 0 ? options.tgid : static_cast<int>(getpid());
  const std::string binary = options.binary.empty() ? executable_of(pid) : options.binary;
  const struct {
    bpf_program* prog;
    bpf_link** link;
    const char* point;
  } points[] = {
      {skel->progs.usdtlat_arrival, &skel->links.usdtlat_arrival, "cmd_arrival"},
      {skel->progs.usdtlat_complete, &skel->links.usdtlat_complete, "cmd_complete"},
      {skel->progs.usdtlat_wait, &skel->links.usdtlat_wait, "queue_wait_end"},
  };
  for (const auto& p : points) {
    *p.link = bpf_program__attach_usdt(p.prog, pid, binary.c_str(), provider, p.point, nullptr);
    if (*p.link == nullptr) {
      error = bpf_error(std::string(source) + ": attach " + provider + ":" + p.point + " in " + binary, errno);
      return nullptr;
    }
  }
  return std::make_unique<Usdtlat>(std::move(skel));
}

}  // namespace probes
