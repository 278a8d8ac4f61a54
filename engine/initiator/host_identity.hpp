#pragma once
// Who this machine is as an NVMe host: the host NQN and host identifier it connects with, found
// as nvme-cli finds them, so our target logs and allowed-host lists name the same host whether
// it ran `nvme connect` or `nvmetune perf`:
//  1. /etc/nvme/hostnqn (and /etc/nvme/hostid) when present;
//  2. else derived from /etc/machine-id the way libnvme does with systemd: the app-specific
//     machine ID for libnvme's application ID (HMAC-SHA256 keyed by the machine ID, made a v4
//     UUID), as nqn.2014-08.org.nvmexpress:uuid:<uuid>;
//  3. else the all-zero UUID, said so in `source`.
// The host identifier is /etc/nvme/hostid, else the UUID of a uuid-form host NQN.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace initiator {

inline constexpr std::string_view hostnqn_uuid_prefix = "nqn.2014-08.org.nvmexpress:uuid:";

struct HostIdentityPaths {
  std::string hostnqn = "/etc/nvme/hostnqn";
  std::string hostid = "/etc/nvme/hostid";
  std::string machine_id = "/etc/machine-id";
};

struct HostIdentity {
  std::string hostnqn;
  std::array<uint8_t, 16> hostid{};
  std::string source;  // where hostnqn came from: "/etc/nvme/hostnqn", "/etc/machine-id", "none (all-zero UUID)"
};

// The first line of a hostnqn file, trimmed; nullopt when the file is absent, empty or does
// not hold an NQN ("nqn." ...).
std::optional<std::string> hostnqn_from_file(const std::string& path);

// nqn.2014-08.org.nvmexpress:uuid:<uuid> from the text of /etc/machine-id (32 hex digits and a
// newline); nullopt when it is not one.
std::optional<std::string> hostnqn_from_machine_id(std::string_view machine_id);

// A UUID's 16 bytes from its text form (8-4-4-4-12 hex digits); nullopt otherwise.
std::optional<std::array<uint8_t, 16>> parse_uuid(std::string_view text);

HostIdentity default_host_identity(const HostIdentityPaths& paths = {});

}  // namespace initiator
