#pragma once
// nvmetune's exit codes (documented in --help and docs/reference/cli.md).
namespace app {

inline constexpr int exit_ok = 0;       // ran and stopped cleanly
inline constexpr int exit_failure = 1;  // could not start or stopped unexpectedly (port in use, missing file, …)
inline constexpr int exit_usage = 2;    // bad command line or invalid configuration

}  // namespace app
