// /proc/interrupts and /proc/softirqs (irq_table.hpp).
#include "engine/system/irq_table.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace sys {

namespace {

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool to_u64(std::string_view s, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<unsigned> header_cpus(std::string_view header) {
  std::vector<unsigned> cpus;
  for (const auto& w : words(header)) {
    uint64_t n = 0;
    if (w.rfind("CPU", 0) == 0 && to_u64(std::string_view(w).substr(3), n)) cpus.push_back(unsigned(n));
  }
  return cpus;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// The hardware IRQ and trigger ("5-edge", "0-edge", "1-fasteoi") between chip and action.
bool is_hwirq(const std::string& w) {
  const size_t dash = w.find('-');
  return dash != std::string::npos && dash > 0 &&
         std::all_of(w.begin(), w.begin() + long(dash), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

IrqTable parse_interrupts(std::string_view text) {
  IrqTable t;
  const auto lines = lines_of(text);
  if (lines.empty() || (t.cpus = header_cpus(lines[0])).empty()) {
    t.error = "no CPU header line";
    return t;
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto w = words(lines[i]);
    uint64_t irq = 0;
    if (w.empty() || w[0].back() != ':' || !to_u64(std::string_view(w[0]).substr(0, w[0].size() - 1), irq)) continue;
    IrqCounts c;
    c.irq = unsigned(irq);
    size_t k = 1;
    for (; k < w.size() && c.per_cpu.size() < t.cpus.size(); ++k) {
      uint64_t n = 0;
      if (!to_u64(w[k], n)) break;
      c.per_cpu.push_back(n);
      c.total += n;
    }
    c.per_cpu.resize(t.cpus.size(), 0);
    if (k < w.size()) c.chip = w[k++];
    // Some chips print a second word before the hwirq ("IR-PCI-MSI 524288-edge").
    size_t h = k;
    while (h < w.size() && !is_hwirq(w[h])) ++h;
    if (h < w.size()) k = h + 1;
    for (; k < w.size(); ++k) c.name += (c.name.empty() ? "" : " ") + w[k];
    t.lines.push_back(std::move(c));
  }
  return t;
}

SoftirqRow parse_softirqs(std::string_view text, std::string_view row) {
  SoftirqRow r;
  const auto lines = lines_of(text);
  if (lines.empty()) return r;
  r.cpus = header_cpus(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto w = words(lines[i]);
    if (w.empty() || w[0] != std::string(row) + ":") continue;
    for (size_t k = 1; k < w.size(); ++k) {
      uint64_t n = 0;
      r.per_cpu.push_back(to_u64(w[k], n) ? n : 0);
    }
  }
  r.per_cpu.resize(r.cpus.size(), 0);
  return r;
}

IrqRole irq_role(std::string_view name) {
  std::string n(name.substr(0, name.find('@')));  // mlx5 appends "@pci:ADDR"
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  size_t digits = n.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(n[digits - 1]))) --digits;
  if (digits == n.size()) return {"other", -1};
  const int queue = std::stoi(n.substr(digits));
  const auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("txrx") || has("comp") || has("combined")) return {"txrx", queue};
  if (has("input") || has("-rx")) return {"rx", queue};
  if (has("output") || has("-tx")) return {"tx", queue};
  return {"other", -1};
}

}  // namespace sys
