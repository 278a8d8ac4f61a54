#pragma once
// Reading the per-CPU maps the probes keep: every key with its value on each possible CPU,
// removed from the map as it is read (one interval per read; libbpf-tools' clear-after-read).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/stats/histogram_data.hpp"
#include "probes/probe_hist.h"

struct bpf_object;

namespace probes {

// CPUs the kernel may report per-CPU values for (libbpf_num_possible_cpus), cached.
size_t possible_cpus();

// Raw form: keys and values as bytes; values holds possible_cpus() slots of value_size
// (rounded up to 8, as the kernel lays them out) per key.
struct RawEntries {
  std::vector<uint8_t> keys;
  std::vector<uint8_t> values;
  size_t count = 0;
};
RawEntries drain_percpu_map(int map_fd, size_t key_size, size_t value_size);

template <class K, class V>
struct PerCpuEntry {
  K key;
  std::vector<V> cpus;  // index = CPU number
};

template <class K, class V>
std::vector<PerCpuEntry<K, V>> drain_percpu(int map_fd) {
  static_assert(sizeof(V) % 8 == 0, "per-CPU values are 8-byte slots");
  RawEntries raw = drain_percpu_map(map_fd, sizeof(K), sizeof(V));
  std::vector<PerCpuEntry<K, V>> out(raw.count);
  const size_t ncpu = possible_cpus();
  for (size_t i = 0; i < raw.count; ++i) {
    std::memcpy(&out[i].key, raw.keys.data() + i * sizeof(K), sizeof(K));
    out[i].cpus.resize(ncpu);
    std::memcpy(out[i].cpus.data(), raw.values.data() + i * ncpu * sizeof(V), ncpu * sizeof(V));
  }
  return out;
}

// The CPUs' histograms of one key, merged (the layout is the engine's: no conversion).
stats::HistogramData merge_cpus(std::span<const nvmt_hist> cpus);

// Arrays cannot delete: slot `key` of a per-CPU array on every CPU, then zeroed.
std::vector<uint8_t> take_percpu_array_slot(int map_fd, uint32_t key, size_t value_size);

template <class V>
std::vector<V> take_percpu_array(int map_fd, uint32_t key) {
  static_assert(sizeof(V) % 8 == 0, "per-CPU values are 8-byte slots");
  std::vector<uint8_t> raw = take_percpu_array_slot(map_fd, key, sizeof(V));
  std::vector<V> out(raw.size() / sizeof(V));
  std::memcpy(out.data(), raw.data(), out.size() * sizeof(V));
  return out;
}

// Events a probe's programs did not see: the kernel skips a tp_btf program that fires again on
// a CPU where it is already running (a completion in an interrupt over the same program in a
// thread) and counts it in the program's recursion_misses. collect() reports the ones of its
// interval as the counter "missed_events", so an exact count says when it is not.
class MissedEvents {
 public:
  // The misses since the last call (all since load on the first), over every program of obj.
  uint64_t take(bpf_object* obj);

 private:
  uint64_t _seen = 0;
};

// "a=1,b=x": labels in the snapshot's key=value form, empty values left out.
std::string labels(std::initializer_list<std::pair<const char*, std::string>> kv);

}  // namespace probes
