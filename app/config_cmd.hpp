#pragma once
// `nvmetune config`: what the configuration accepts, printed from the settings schema the
// engine validates with. `config reference` writes docs/reference/configuration.md (a test
// compares the two), `config schema` the JSON the control socket's `settings.schema` returns.
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace app {

// The tuning settings' reference as Markdown.
std::string configuration_reference_markdown();

std::function<int()> attach_config(CLI::App& cmd);

}  // namespace app
