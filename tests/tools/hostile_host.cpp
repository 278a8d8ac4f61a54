// hostile_host: the churn soak's battery (tests/support/hostile_host.hpp) against a running
// target, for repeated runs against `nvmetune serve` (issue 33's 20-of-20):
//   hostile_host [--port 4420] [--nqn NQN] [--rounds 3] [--churn-seconds 12]
// Each malformed case runs on its own connection and is followed by a health check (ICReq and an
// admin Connect on a fresh connection); then connect/ICReq/close cycles for the churn seconds
// with a health check beside them. Exit 0 when every case and check passed, 1 otherwise.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/hostile_host.hpp"

int main(int argc, char** argv) {
  uint16_t port = 4420;
  std::string nqn = "nqn.2026-12.io.nvmetune:default";
  const std::string host = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000033";
  // 12 s of churn: the default connect timeout (10 s) expires the battery's half-open connections
  // while the storm closes queues by the thousand, the race of issue 33.
  unsigned rounds = 3, churn_seconds = 12;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--help" || a == "-h") {
      std::puts("usage: hostile_host [--port 4420] [--nqn NQN] [--rounds 3] [--churn-seconds 12]\n"
                "Runs the malformed-PDU battery, mid-command disconnects and a connect/close storm against\n"
                "an NVMe/TCP target on 127.0.0.1, with a health check after each case. Exit 1 on any failure.");
      return 0;
    }
    if (!v) {
      std::fprintf(stderr, "hostile_host: %s needs a value (see --help)\n", a.c_str());
      return 2;
    }
    if (a == "--port") port = uint16_t(std::atoi(v));
    else if (a == "--nqn") nqn = v;
    else if (a == "--rounds") rounds = unsigned(std::atoi(v));
    else if (a == "--churn-seconds") churn_seconds = unsigned(std::atoi(v));
    else {
      std::fprintf(stderr, "hostile_host: unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  unsigned failed = 0, ran = 0;
  const auto fail = [&](const std::string& what) {
    ++failed;
    std::fprintf(stderr, "FAIL %s\n", what.c_str());
  };
  const auto cases = hostile::battery(nqn, host);
  for (unsigned r = 0; r < rounds; ++r) {
    for (const auto& c : cases) {
      ++ran;
      if (auto e = hostile::run_case(c, port, nqn, host); !e.empty()) fail(std::string(c.name) + ": " + e);
      if (auto e = hostile::health_check(port, nqn, host); !e.empty())
        fail(std::string("health check after ") + c.name + ": " + e);
    }
    if (auto e = hostile::mid_command_disconnects(port, nqn, host, 12); !e.empty()) fail(e);
  }
  uint64_t made = 0;
  std::thread storm([&] { made = hostile::churn(port, hostile::Clock::now() + std::chrono::seconds(churn_seconds)); });
  unsigned checks = 0;
  for (const auto until = hostile::Clock::now() + std::chrono::seconds(churn_seconds); hostile::Clock::now() < until;
       ++checks)
    if (auto e = hostile::health_check(port, nqn, host); !e.empty()) fail("health check during the churn: " + e);
  storm.join();
  if (auto e = hostile::health_check(port, nqn, host); !e.empty()) fail("final health check: " + e);
  std::printf("hostile_host: %u cases in %u rounds, %llu churn connections, %u health checks during it: %s\n", ran,
              rounds, static_cast<unsigned long long>(made), checks, failed ? "FAILED" : "all passed");
  return failed ? 1 : 0;
}
