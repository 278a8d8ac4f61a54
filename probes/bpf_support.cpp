#include "probes/bpf_support.hpp"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

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

}  // namespace

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
