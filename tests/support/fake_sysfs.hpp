#pragma once
// Fake /proc + /sys trees for the steering code (engine/system/steering_*): the layouts of
// real NICs, written into a temporary directory that a sys::SysRoot then stands on. A test
// double because a machine with these NICs (and with 48 or 64 CPUs) does not exist here.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace test_support {

struct FakeIrq {
  unsigned irq;
  std::string chip;   // "PCI-MSIX-0000:00:03.0"
  std::string hwirq;  // "1-edge"
  std::string name;   // "virtio2-input.0"
  std::string affinity = "0-1";
  std::string effective = "0";
};

class FakeSysfs {
 public:
  explicit FakeSysfs(unsigned cpus) : _cpus(cpus) {
    char tmpl[] = "/tmp/nvmetune-fake-sysfs-XXXXXX";
    _root = mkdtemp(tmpl);
    write("/sys/devices/system/cpu/online", "0-" + std::to_string(cpus - 1) + "\n");
    write("/proc/sys/net/core/rps_sock_flow_entries", "0\n");
    write("/proc/sys/net/core/busy_poll", "0\n");
    write("/proc/sys/net/core/busy_read", "0\n");
    write("/proc/sys/kernel/random/boot_id", "6d3c7e1a-0000-4000-8000-fakeboot0001\n");
  }
  ~FakeSysfs() {
    std::error_code ec;
    std::filesystem::remove_all(_root, ec);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return _root; }
  std::string host(const std::string& path) const { return _root + path; }

  void write(const std::string& path, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(host(path)).parent_path());
    std::ofstream(host(path), std::ios::binary | std::ios::trunc) << text;
  }
  std::string read(const std::string& path) const {
    std::ifstream in(host(path), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void link(const std::string& path, const std::string& target) const {
    std::filesystem::create_directories(std::filesystem::path(host(path)).parent_path());
    std::filesystem::create_directory_symlink(target, host(path));
  }

  // A line of /proc/interrupts with its /proc/irq files; counts[i] on CPU i (default 0).
  void irq(const FakeIrq& l, std::vector<unsigned long> counts = {}) {
    counts.resize(_cpus, 0);
    _irqs[l.irq] = {l, counts};
    write("/proc/irq/" + std::to_string(l.irq) + "/smp_affinity_list", l.affinity + "\n");
    write("/proc/irq/" + std::to_string(l.irq) + "/effective_affinity_list", l.effective + "\n");
    write_interrupts();
  }

  // A NIC: /sys/class/net/IF -> its device directory (sysfs-style relative link), rx/tx queues
  // with RPS/XPS masks in the kernel's width, msi_irqs under msi_dir ("" = none).
  void nic(const std::string& ifname, const std::string& device_dir, const std::string& msi_dir,
           const std::vector<unsigned>& msi, unsigned rx, unsigned tx) {
    std::filesystem::create_directories(host(device_dir));
    link("/sys/class/net/" + ifname + "/device", "../../.." + device_dir.substr(4));  // device_dir starts "/sys"
    for (unsigned irq : msi) write(msi_dir + "/msi_irqs/" + std::to_string(irq), "msix\n");
    for (unsigned q = 0; q < rx; ++q) {
      write(queue(ifname, "rx", q) + "/rps_cpus", empty_mask() + "\n");
      write(queue(ifname, "rx", q) + "/rps_flow_cnt", "0\n");
    }
    for (unsigned q = 0; q < tx; ++q) write(queue(ifname, "tx", q) + "/xps_cpus", empty_mask() + "\n");
  }

  static std::string queue(const std::string& ifname, const char* kind, unsigned q) {
    return "/sys/class/net/" + ifname + "/queues/" + kind + "-" + std::to_string(q);
  }

  // The kernel's bitmap width: one hex digit per 4 CPUs, words of 8 digits.
  std::string empty_mask() const {
    std::string out;
    unsigned digits = (_cpus + 3) / 4;
    for (unsigned left = digits; left > 0;) {
      const unsigned w = left % 8 ? left % 8 : 8;
      out += (out.empty() ? "" : ",") + std::string(w, '0');
      left -= w;
    }
    return out;
  }

  // Every regular file under the root with its content (to compare before/after byte for byte).
  std::map<std::string, std::string> files() const {
    std::map<std::string, std::string> out;
    for (auto& e : std::filesystem::recursive_directory_iterator(_root))
      if (e.is_regular_file() && !e.is_symlink()) out[e.path().string().substr(_root.size())] = read(e.path().string().substr(_root.size()));
    return out;
  }

 private:
  void write_interrupts() const {
    std::string text = "      ";
    for (unsigned c = 0; c < _cpus; ++c) {
      char b[32];
      std::snprintf(b, sizeof b, " %10s", ("CPU" + std::to_string(c)).c_str());
      text += b;
    }
    text += "\n";
    for (const auto& [irq, entry] : _irqs) {
      char b[64];
      std::snprintf(b, sizeof b, "%4u:", irq);
      text += b;
      for (unsigned long n : entry.second) {
        std::snprintf(b, sizeof b, " %10lu", n);
        text += b;
      }
      text += "  " + entry.first.chip + "  " + entry.first.hwirq + "      " + entry.first.name + "\n";
    }
    text += " NMI:" + std::string(_cpus * 11, ' ') + "  Non-maskable interrupts\n";
    write("/proc/interrupts", text);
  }

  unsigned _cpus;
  std::string _root;
  std::map<unsigned, std::pair<FakeIrq, std::vector<unsigned long>>> _irqs;
};

}  // namespace test_support
