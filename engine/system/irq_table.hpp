#pragma once
// /proc/interrupts and /proc/softirqs parsed: per-line, per-CPU counts since boot.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sys {

struct IrqCounts {
  unsigned irq = 0;
  std::string chip;    // "PCI-MSIX-0000:00:03.0", "IR-PCI-MSI-0000:3b:00.0", "IO-APIC"
  std::string name;    // the action(s): "virtio2-input.0", "mlx5_comp3@pci:0000:3b:00.0"
  std::vector<uint64_t> per_cpu;  // indexed like IrqTable::cpus
  uint64_t total = 0;
};

struct IrqTable {
  std::vector<unsigned> cpus;     // the header's CPU numbers (online CPUs), in column order
  std::vector<IrqCounts> lines;   // numbered lines only (NMI, LOC... are not steerable)
  std::string error;              // empty when parsed
};

// The text of /proc/interrupts.
IrqTable parse_interrupts(std::string_view text);

// One row of /proc/softirqs ("NET_RX"), counts in the header's CPU order.
struct SoftirqRow {
  std::vector<unsigned> cpus;
  std::vector<uint64_t> per_cpu;
};
SoftirqRow parse_softirqs(std::string_view text, std::string_view row);

// The queue an interrupt line serves, from its name: "virtio2-input.0" → rx 0,
// "mlx5_comp3@pci:…" → txrx 3, "ice-ens1f0-TxRx-2" → txrx 2, "eth0-tx-1" → tx 1; anything else
// (config, async, misc) → "other", queue -1.
struct IrqRole {
  std::string role;  // "rx" | "tx" | "txrx" | "other"
  int queue = -1;
};
IrqRole irq_role(std::string_view name);

}  // namespace sys
