// nvmetune's command line: one table of subcommands, each declared by its own file.
//   nvmetune            GUI when a display exists (and the GUI is built), else `serve` on the
//                       embedded default
//   nvmetune serve      the headless engine (serve.cpp)
//   nvmetune ctl        the control socket's client (ctl.cpp)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "app/config_cmd.hpp"
#include "app/ctl.hpp"
#include "app/db.hpp"
#include "app/exit_code.hpp"
#include "app/perf.hpp"
#include "app/probe.hpp"
#include "app/profile.hpp"
#include "app/hog.hpp"
#include "app/experiment.hpp"
#include "app/serve.hpp"
#include "app/steer.hpp"
#ifdef NVMETUNE_HAVE_GUI
#include "app/gui.hpp"
#endif

namespace {

// One row per subcommand. attach() declares the subcommand's options on cmd and returns what
// to run when it is chosen (an exit code). Later subcommands — ctl, perf, profile, hog,
// experiment, db — each add one row here and one file of their own.
struct Subcommand {
  const char* name;
  const char* summary;
  std::function<int()> (*attach)(CLI::App& cmd);
};

std::function<int()> attach_serve(CLI::App& cmd) {
  auto opts = std::make_shared<app::ServeOptions>();
  app::add_serve_options(cmd, *opts);
  return [opts] { return app::run_serve_command(*opts); };
}

std::function<int()> attach_perf(CLI::App& cmd) {
  auto opts = std::make_shared<app::PerfOptions>();
  app::add_perf_options(cmd, *opts);
  return [opts] { return app::run_perf(*opts); };
}

std::function<int()> attach_hog(CLI::App& cmd) {
  auto opts = std::make_shared<app::HogOptions>();
  app::add_hog_options(cmd, *opts);
  return [opts] { return app::run_hog(*opts); };
}

std::function<int()> attach_experiment(CLI::App& cmd) {
  auto opts = std::make_shared<app::ExperimentOptions>();
  app::add_experiment_options(cmd, *opts);
  return [opts] { return app::run_experiment(*opts); };
}

std::function<int()> attach_ctl(CLI::App& cmd) {
  auto opts = std::make_shared<app::CtlOptions>();
  app::add_ctl_options(cmd, *opts);
  return [opts] { return app::run_ctl(*opts); };
}

constexpr Subcommand subcommands[] = {
    {"serve", "Run the NVMe-oF target (TCP and RDMA listeners) headless until SIGINT/SIGTERM.", attach_serve},
    {"ctl", "Query or tune a running engine over its control socket (JSON-RPC).", attach_ctl},
    {"perf", "NVMe/TCP and NVMe/RDMA load generator (spdk_nvme_perf target string, fio-shaped results).", attach_perf},
    {"profile", "Tuning profiles: save, list, show, diff, export, import (nvmetcli, SPDK), apply.", app::attach_profile},
    {"hog", "CPU-contention generator: busy/sleep duty-cycle threads pinned to CPUs.", attach_hog},
    {"experiment", "Run engine settings x workloads x contention levels and compare them.", attach_experiment},
    {"db", "Read the recorded statistics database: runs, series, percentiles, compare, export, vacuum.", app::attach_db},
    {"steer", "IRQ affinity, RPS/XPS/RFS and busy polling: show, plan (dry run), apply, revert.", app::attach_steer},
    {"config", "The configuration's tuning settings from the schema the engine validates with: reference (Markdown), schema (JSON).", app::attach_config},
    {"probe", "eBPF probes: runqlat, irqload, wqlat, biolat, socklat, usdtlat (standalone or list/start/stop).", app::attach_probe},
};

bool display_available() {
  for (const char* var : {"DISPLAY", "WAYLAND_DISPLAY"}) {
    const char* v = std::getenv(var);
    if (v && *v) return true;
  }
  return false;
}

// `nvmetune` without a subcommand: the embedded default, in a window when one can be shown.
int run_default(bool headless) {
  if (!headless && display_available()) {
#ifdef NVMETUNE_HAVE_GUI
    return app::run_gui(control::default_config());
#else
    std::fprintf(stderr, "nvmetune: built without the GUI (NVMETUNE_GUI=OFF); serving headless\n");
#endif
  }
  return app::serve(control::default_config());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{
      "nvmetune: an NVMe-over-Fabrics target (NVMe/TCP and NVMe/RDMA) with live tuning of its execution model.\n"
      "Without a subcommand: opens the GUI when a display is available ($DISPLAY or\n"
      "$WAYLAND_DISPLAY), otherwise serves the embedded default headless (as `nvmetune serve`):\n"
      "a 1 GiB RAM namespace in nqn.2026-12.io.nvmetune:default on 127.0.0.1:4420.",
      "nvmetune"};
  cli.set_version_flag("--version", NVMETUNE_VERSION);
  bool headless = false;
  cli.add_flag("--headless", headless, "Never open the GUI, even when a display is available.");
  std::string screenshot_dir;
  cli.add_option("--screenshot", screenshot_dir,
                 "Run a short built-in load against an embedded engine, switch the mode once, write every main "
                 "view to DIR/<view>.png (and <view>-dark.png, <view>-4k.png: 3840x2160 at 200 %) and exit. Works "
                 "without a display (QT_QPA_PLATFORM=offscreen).")
      ->type_name("DIR");
  cli.require_subcommand(0, 1);
  cli.footer("Run `nvmetune SUBCOMMAND --help` for a subcommand's options.");

  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
  for (const auto& s : subcommands) {
    CLI::App* cmd = cli.add_subcommand(s.name, s.summary);
    actions.emplace_back(cmd, s.attach(*cmd));
  }

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = cli.exit(e);  // prints help, the version, or the error
    return rc == 0 ? app::exit_ok : app::exit_usage;
  }
  for (const auto& [cmd, run] : actions) {
    if (cmd->parsed()) return run();
  }
  if (!screenshot_dir.empty()) {
#ifdef NVMETUNE_HAVE_GUI
    return app::run_screenshot(screenshot_dir);
#else
    std::fprintf(stderr, "nvmetune: --screenshot needs the GUI (built with NVMETUNE_GUI=OFF)\n");
    return app::exit_usage;
#endif
  }
  return run_default(headless);
}
