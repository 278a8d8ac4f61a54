// biolat's loader (biolat.bpf.c): block I/O latency per disk, optionally of one disk.
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>

#include "probes/biolat.h"
#include "probes/bpf_maps.hpp"
#include "probes/loaders.hpp"
#include "probes/skeleton.hpp"
#include "biolat.skel.h"

namespace probes {

namespace {

constexpr const char* source = "biolat";
constexpr unsigned kernel_minor_bits = 20;  // the kernel's MINORBITS (dev_t inside the kernel)

uint32_t kernel_dev(dev_t d) { return (major(d) << kernel_minor_bits) | minor(d); }

// "loop0" for a kernel dev_t, from /sys/dev/block/MAJ:MIN (a link to the disk's directory).
std::string disk_name(uint32_t dev) {
  char path[64], target[256];
  std::snprintf(path, sizeof path, "/sys/dev/block/%u:%u", dev >> kernel_minor_bits,
                dev & ((1u << kernel_minor_bits) - 1));
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return std::to_string(dev >> kernel_minor_bits) + ":" + std::to_string(dev & 0xfffff);
  target[n] = '\0';
  const char* slash = std::strrchr(target, '/');
  return slash ? slash + 1 : target;
}

// The filter names a disk: "loop0", "/dev/loop0" or "7:0".
bool parse_disk(const std::string& filter, uint32_t& dev, std::string& error) {
  unsigned maj = 0, min = 0;
  char extra = 0;
  if (std::sscanf(filter.c_str(), "%u:%u%c", &maj, &min, &extra) == 2) {
    dev = (maj << kernel_minor_bits) | min;
    return true;
  }
  const std::string path = filter.find('/') == std::string::npos ? "/dev/" + filter : filter;
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) {
    error = std::string(source) + ": \"" + filter + "\" is not a block device (give loop0, /dev/loop0 or MAJ:MIN)";
    return false;
  }
  dev = kernel_dev(st.st_rdev);
  return true;
}

class Biolat final : public Probe {
 public:
  Biolat(SkeletonPtr<biolat_bpf> skel, bool per_disk) : _skel(std::move(skel)), _per_disk(per_disk) {}

  ProbeData collect() override {
    ProbeData out;
    out.histograms.push_back({source, "", {}});
    for (auto& e : drain_percpu<biolat_key, nvmt_hist>(bpf_map__fd(_skel->maps.hists))) {
      stats::HistogramData h = merge_cpus(e.cpus);
      out.histograms.front().hist.merge(h);
      if (_per_disk) out.histograms.push_back({source, labels({{"disk", disk_name(e.key.dev)}}), std::move(h)});
    }
    return out;
  }

 private:
  SkeletonPtr<biolat_bpf> _skel;
  bool _per_disk;
};

}  // namespace

std::unique_ptr<Probe> load_biolat(const ProbeOptions& options, std::string& error) {
  uint32_t dev = 0;
  if (!options.filter.empty() && !parse_disk(options.filter, dev, error)) return nullptr;
  auto skel = open_load_attach(source, NVMT_SKELETON_OPS(biolat), [&](biolat_bpf& s) {
    s.rodata->per_disk = options.per_key;
    s.rodata->filter_dev = !options.filter.empty();
    s.rodata->targ_dev = dev;
  }, error);
  if (!skel) return nullptr;
  return std::make_unique<Biolat>(std::move(skel), options.per_key);
}

}  // namespace probes
