// What an engine USDT point (engine/stats/usdt.hpp) costs per hit: absent, present but not
// attached (the state the engine runs in unless `probe start usdtlat`), and attached by the
// usdtlat probe. Prints ns per call, median of REPS repetitions with min-max. Needs root for the
// attached case (skipped with the reason otherwise).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/stats/usdt.hpp"
#include "probes/probe_catalog.hpp"

namespace {

constexpr int reps = 7;

__attribute__((noinline)) void without_point(uint64_t i, uint64_t& acc) {
  asm volatile("" : "+r"(i));
  acc += i;
}

__attribute__((noinline)) void with_point(uint64_t i, uint64_t& acc) {
  NVMT_USDT3(cmd_arrival, &acc, i & 0xffff, 2);
  acc += i;
}

// Never called: the other two points usdtlat attaches to must exist in this binary.
__attribute__((noinline, used)) void other_points(uint64_t i) {
  NVMT_USDT3(cmd_complete, &i, i, i);
  NVMT_USDT2(queue_wait_end, &i, i);
}

template <class F>
double ns_per_call(F f, uint64_t n) {
  std::vector<double> v;
  uint64_t acc = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < n; ++i) f(i, acc);
    v.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / double(n));
  }
  std::sort(v.begin(), v.end());
  std::printf(" median %.2f ns (min %.2f max %.2f, %d x %llu calls)%s\n", v[v.size() / 2], v.front(), v.back(), reps,
              static_cast<unsigned long long>(n), acc == 42 ? " " : "");
  return v[v.size() / 2];
}

}  // namespace

int main() {
  std::printf("no USDT point:         ");
  const double base = ns_per_call(without_point, 50'000'000);
  std::printf("USDT point, unattached:");
  const double idle = ns_per_call(with_point, 50'000'000);
  std::printf("unattached cost: %+.2f ns per hit\n", idle - base);
  std::string error;
  auto probe = probes::find_probe_kind("usdtlat")->load({static_cast<int>(getpid()), {}, true, {}}, error);
  if (!probe) {
    std::printf("attached: skipped (%s)\n", error.c_str());
    return 0;
  }
  std::printf("USDT point, attached:  ");
  const double hot = ns_per_call(with_point, 200'000);
  std::printf("attached cost: %+.0f ns per hit\n", hot - base);
  return 0;
}
