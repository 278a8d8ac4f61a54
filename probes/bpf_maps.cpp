#include "probes/bpf_maps.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>

#include "engine/stats/histogram_layout.hpp"

namespace probes {

static_assert(NVMT_HIST_BUCKETS == stats::histogram_layout::buckets,
              "probe_hist.h must describe the engine's histogram layout");
static_assert(NVMT_HIST_MAX_NS == stats::histogram_layout::max_trackable_ns);

size_t possible_cpus() {
  static const size_t n = [] {
    int c = libbpf_num_possible_cpus();
    return c > 0 ? static_cast<size_t>(c) : size_t{1};
  }();
  return n;
}

// Keys first, then lookup-and-delete per key: deleting while walking with get_next_key would
// restart the walk. An event landing between a key's lookup and its deletion is lost, the
// price bcc's tools pay too; lookup_and_delete makes that window one syscall wide.
RawEntries drain_percpu_map(int map_fd, size_t key_size, size_t value_size) {
  RawEntries out;
  const size_t slot = (value_size + 7) / 8 * 8;
  const size_t stride = slot * possible_cpus();
  std::vector<uint8_t> key(key_size), next(key_size);
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, next.data()) == 0) {
    out.keys.insert(out.keys.end(), next.begin(), next.end());
    key = next;
    prev = key.data();
  }
  const size_t n = out.keys.size() / std::max<size_t>(key_size, 1);
  out.values.resize(n * stride);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* k = out.keys.data() + i * key_size;
    uint8_t* v = out.values.data() + out.count * stride;
    if (bpf_map_lookup_and_delete_elem(map_fd, k, v) != 0) continue;  // gone meanwhile
    if (out.count != i) std::memmove(out.keys.data() + out.count * key_size, k, key_size);
    ++out.count;
  }
  out.keys.resize(out.count * key_size);
  out.values.resize(out.count * stride);
  return out;
}

stats::HistogramData merge_cpus(std::span<const nvmt_hist> cpus) {
  stats::HistogramData total;
  for (const nvmt_hist& c : cpus) {
    if (c.count == 0) continue;
    stats::HistogramData h;
    h.counts.assign(std::begin(c.buckets), std::end(c.buckets));
    h.count = c.count;
    h.sum_ns = c.sum_ns;
    h.min_ns = c.min_ns;
    h.max_ns = c.max_ns;
    total.merge(h);
  }
  return total;
}

// An increment between the read and the zeroing is lost (one syscall wide, as with hashes).
std::vector<uint8_t> take_percpu_array_slot(int map_fd, uint32_t key, size_t value_size) {
  std::vector<uint8_t> values((value_size + 7) / 8 * 8 * possible_cpus(), 0);
  if (bpf_map_lookup_elem(map_fd, &key, values.data()) != 0) return {};
  const std::vector<uint8_t> zero(values.size(), 0);
  bpf_map_update_elem(map_fd, &key, zero.data(), BPF_ANY);
  return values;
}

std::string labels(std::initializer_list<std::pair<const char*, std::string>> kv) {
  std::string out;
  for (const auto& [k, v] : kv) {
    if (v.empty()) continue;
    if (!out.empty()) out += ',';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

uint64_t MissedEvents::take(bpf_object* obj) {
  uint64_t total = 0;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) total += info.recursion_misses;
  }
  const uint64_t delta = total >= _seen ? total - _seen : 0;
  _seen = total;
  return delta;
}

}  // namespace probes
