#pragma once
// The probes' loaders (one file each: runqlat.cpp, irqload.cpp, ...): each loads and attaches
// its BPF programs, or returns nullptr with the reason in error.
#include <memory>
#include <string>

#include "probes/probe.hpp"

namespace probes {

std::unique_ptr<Probe> load_runqlat(const ProbeOptions& options, std::string& error);
std::unique_ptr<Probe> load_irqload(const ProbeOptions& options, std::string& error);
std::unique_ptr<Probe> load_wqlat(const ProbeOptions& options, std::string& error);
std::unique_ptr<Probe> load_biolat(const ProbeOptions& options, std::string& error);
std::unique_ptr<Probe> load_socklat(const ProbeOptions& options, std::string& error);
std::unique_ptr<Probe> load_usdtlat(const ProbeOptions& options, std::string& error);

// "tid=812,comm=nvmt-w0" for a thread (comm from /proc, "" when the thread is gone).
std::string thread_labels(uint32_t tid);

}  // namespace probes
