// biolat's loader (biolat.bpf.c): block I/O latency per disk, optionally of one disk.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

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

// The kernel dev_t of the whole disk a (partition or disk) device belongs to: what disk_dev()
// in biolat.bpf.c compares, since requests carry the disk, not the partition.
uint32_t whole_disk(dev_t d) {
  char path[80];
  std::snprintf(path, sizeof path, "/sys/dev/block/%u:%u/partition", major(d), minor(d));
  if (access(path, F_OK) == 0) {
    std::snprintf(path, sizeof path, "/sys/dev/block/%u:%u/../dev", major(d), minor(d));
    unsigned maj = 0, min = 0;
    if (FILE* f = std::fopen(path, "re")) {
      const bool ok = std::fscanf(f, "%u:%u", &maj, &min) == 2;
      std::fclose(f);
      if (ok) return (maj << kernel_minor_bits) | min;
    }
  }
  return kernel_dev(d);
}

// The disk under a namespace's file or block device; false when it is on no block device
// (tmpfs, overlay: major 0 has no /sys/dev/block entry) or gone.
bool disk_of_path(const std::string& path, uint32_t& dev) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return false;
  const dev_t d = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  char sys[64];
  std::snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(d), minor(d));
  if (access(sys, F_OK) != 0) return false;
  dev = whole_disk(d);
  return true;
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
    error = std::string(source) + ": \"" + filter + "\" is not a block device (give loop0, /dev/loop0, MAJ:MIN or all)";
    return false;
  }
  dev = kernel_dev(st.st_rdev);
  return true;
}

// The disks to watch: the one the filter names; every disk for "all"; else the disks under the
// engine's namespaces, or every disk when none of them is on one. Empty = every disk.
bool disks_to_watch(const ProbeOptions& options, std::vector<uint32_t>& disks, std::string& error) {
  if (options.filter == "all") return true;
  if (!options.filter.empty()) {
    uint32_t dev = 0;
    if (!parse_disk(options.filter, dev, error)) return false;
    disks.push_back(dev);
    return true;
  }
  for (const std::string& path : options.backing_paths) {
    uint32_t dev = 0;
    if (disk_of_path(path, dev) && std::find(disks.begin(), disks.end(), dev) == disks.end()) disks.push_back(dev);
  }
  if (disks.size() > BIOLAT_MAX_DISKS) disks.clear();  // more than a map holds: watch them all
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
    // The .bss is mapped into this process: a plain read of a counter the programs add to.
    const uint64_t refused = __atomic_load_n(&_skel->bss->refused, __ATOMIC_RELAXED);
    const uint64_t n = _missed.take(_skel->obj) + (refused - _refused_seen);
    _refused_seen = refused;
    if (n) out.counters.push_back({"missed_events", "", n});
    return out;
  }

 private:
  SkeletonPtr<biolat_bpf> _skel;
  MissedEvents _missed;
  uint64_t _refused_seen = 0;
  bool _per_disk;
};

}  // namespace

std::unique_ptr<Probe> load_biolat(const ProbeOptions& options, std::string& error) {
  std::vector<uint32_t> disks;
  if (!disks_to_watch(options, disks, error)) return nullptr;
  auto skel = open_load_attach(source, NVMT_SKELETON_OPS(biolat), [&](biolat_bpf& s) {
    s.rodata->per_disk = options.per_key;
    s.rodata->filter_dev = !disks.empty();
  }, error);
  if (!skel) return nullptr;
  // Filled after attach: requests issued meanwhile are not counted, none is miscounted.
  const uint8_t yes = 1;
  for (uint32_t dev : disks) {
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.disks), &dev, &yes, BPF_ANY) != 0) {
      error = std::string(source) + ": cannot fill the disk filter (errno " + std::to_string(errno) + ")";
      return nullptr;
    }
  }
  return std::make_unique<Biolat>(std::move(skel), options.per_key);
}

}  // namespace probes
