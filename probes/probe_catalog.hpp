#pragma once
// Every probe nvmetune has, by name: what it measures, what its filter means, its loader.
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "probes/probe.hpp"

namespace probes {

struct ProbeKind {
  const char* name;
  const char* summary;      // one line: what it measures, from which event to which
  const char* filter_help;  // what ProbeOptions::filter selects; nullptr: the probe takes none
  bool per_process;         // measures one process's threads (the engine's when it runs in serve)
  std::unique_ptr<Probe> (*load)(const ProbeOptions& options, std::string& error);
};

std::span<const ProbeKind> probe_kinds();
const ProbeKind* find_probe_kind(std::string_view name);
// "runqlat, irqload, ..." for messages.
std::string probe_names();

}  // namespace probes
