#pragma once
// The GUI entry point, compiled only when NVMETUNE_GUI is on (gui_main.cpp). Everything Qt
// is behind this one function so the headless paths never touch it.
#include "engine/config/config.hpp"

namespace app {

// Runs the engine on cfg with the main window until the window closes or SIGINT/SIGTERM
// arrives. Returns an exit code (exit_code.hpp).
int run_gui(const control::Config& cfg);

// `nvmetune --screenshot DIR`: renders every main view after a short built-in load and one
// mode switch against an embedded engine on a free port (ui/screenshot.hpp). Exit code.
int run_screenshot(const std::string& dir);

}  // namespace app
