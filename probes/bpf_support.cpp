#include "probes/bpf_support.hpp"

#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>

namespace probes {

namespace {

// /proc/sys/kernel/unprivileged_bpf_disabled: 0 = allowed, 1/2 = only with CAP_BPF/CAP_SYS_ADMIN.
std::string unprivileged_bpf_setting() {
  std::ifstream in("/proc/sys/kernel/unprivileged_bpf_disabled");
  std::string value;
  if (!(in >> value)) return "unknown";
  return value;
}

std::string denied_reason(int err) {
  switch (err) {
    case EPERM:
    case EACCES:
      return "bpf(BPF_PROG_LOAD) refused (" + std::string(std::strerror(err)) +
             "): run as root or grant CAP_BPF and CAP_PERFMON (kernel.unprivileged_bpf_disabled=" +
             unprivileged_bpf_setting() + "; containers may also block bpf(2) with seccomp)";
    case ENOSYS:
      return "the kernel has no bpf(2) system call (CONFIG_BPF_SYSCALL is off)";
    default:
      return "bpf(BPF_PROG_LOAD) failed: " + std::string(std::strerror(err));
  }
}

// Capability numbers newer than some libc headers.
constexpr int cap_perfmon = 38;
constexpr int cap_bpf = 39;
constexpr int cap_sys_admin = 21;

bool has_effective_cap(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

std::mutex log_mu;
std::string last_warning;  // guarded by log_mu

// The verifier's log arrives as one long message; the operator's line keeps its last line
// (where the verifier says what it refused), verbose mode shows all of it.
int libbpf_log(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return 0;
  std::string text(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, args);
  text.resize(static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  static const bool verbose = [] {
    const char* v = std::getenv("NVMETUNE_BPF_VERBOSE");
    return v != nullptr && *v == '1';
  }();
  if (verbose) std::fprintf(stderr, "libbpf: %s\n", text.c_str());
  const size_t nl = text.rfind('\n');
  std::lock_guard lock(log_mu);
  last_warning = nl == std::string::npos ? text : text.substr(nl + 1);
  return 0;
}

}  // namespace

std::string missing_for_tracing() {
  struct stat st{};
  if (stat("/sys/kernel/btf/vmlinux", &st) != 0)
    return "the kernel exposes no BTF (/sys/kernel/btf/vmlinux is missing: CONFIG_DEBUG_INFO_BTF is off)";
  const bool admin = has_effective_cap(cap_sys_admin);
  const bool bpf = admin || has_effective_cap(cap_bpf);
  const bool perfmon = admin || has_effective_cap(cap_perfmon);
  if (!bpf || !perfmon) {
    std::string lacking = !bpf && !perfmon ? "CAP_BPF and CAP_PERFMON" : !bpf ? "CAP_BPF" : "CAP_PERFMON";
    return "eBPF tracing needs root or CAP_BPF+CAP_PERFMON; this process (euid " + std::to_string(geteuid()) +
           ") lacks " + lacking;
  }
  return {};
}

bool is_permission_error(int err) {
  err = err < 0 ? -err : err;
  return err == EPERM || err == EACCES;
}

std::string bpf_error(std::string_view what, int err) {
  err = err < 0 ? -err : err;
  std::string out(what);
  out += ": ";
  // EPERM is a missing privilege; EACCES too, unless we hold them: then the verifier refused
  // the program (its reason is libbpf's last line, below).
  if (is_permission_error(err)) {
    std::string missing = missing_for_tracing();
    if (!missing.empty()) return out + missing;
    if (err == EPERM) return out + denied_reason(err);
  }
  if (err == ENOSYS) return out + denied_reason(err);
  out += std::strerror(err);
  std::lock_guard lock(log_mu);
  if (!last_warning.empty()) out += " (libbpf: " + last_warning + ")";
  return out;
}

void install_libbpf_log() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(libbpf_log); });
}

BpfPermission check_bpf_permission() {
  // r0 = 0; exit — accepted by the verifier for BPF_PROG_TYPE_SOCKET_FILTER.
  std::array<bpf_insn, 2> insns{};
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[0].dst_reg = BPF_REG_0;
  insns[0].imm = 0;
  insns[1].code = BPF_JMP | BPF_EXIT;

  static constexpr char license[] = "GPL";
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);  // the kernel requires unused attr bytes to be zero
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insns = reinterpret_cast<uint64_t>(insns.data());
  attr.insn_cnt = insns.size();
  attr.license = reinterpret_cast<uint64_t>(license);

  long fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
  if (fd < 0) return {false, denied_reason(errno)};
  close(static_cast<int>(fd));
  return {true, "bpf(BPF_PROG_LOAD) of a socket filter succeeded"};
}

}  // namespace probes
