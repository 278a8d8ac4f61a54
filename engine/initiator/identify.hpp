#pragma once
// Host-side views of the data structures a controller returns: Identify Controller,
// Identify Namespace, the Discovery log page (70h) and the Changed Namespace List (04h).
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace initiator {

inline constexpr uint32_t identify_size = 4096;

struct ControllerIdentity {
  uint16_t vid = 0;
  std::string sn, mn, fr;  // trailing spaces removed
  uint8_t mdts = 0;        // log2 of the largest transfer in units of CAP.MPSMIN pages; 0 = none
  uint16_t cntlid = 0;
  uint32_t ver = 0;
  uint16_t kas = 0;        // keep-alive granularity, 100 ms units
  uint8_t sqes = 0, cqes = 0;
  uint16_t maxcmd = 0;
  uint32_t nn = 0;
  uint16_t oncs = 0;
  uint8_t vwc = 0;
  uint32_t sgls = 0;
  std::string subnqn;
  uint32_t ioccsz = 0;     // I/O queue command capsule size, 16-byte units
  uint32_t iorcsz = 0;     // I/O queue response capsule size, 16-byte units
  uint16_t icdoff = 0;
  uint8_t msdbd = 0;
};
ControllerIdentity parse_identify_controller(std::span<const uint8_t> d);

struct NamespaceIdentity {
  uint64_t nsze = 0, ncap = 0, nuse = 0;
  uint8_t nsfeat = 0, nlbaf = 0, flbas = 0;
  uint32_t block_size = 0;  // from the LBA format FLBAS selects
  std::array<uint8_t, 16> nguid{};
  std::array<uint8_t, 8> eui64{};
};
NamespaceIdentity parse_identify_namespace(std::span<const uint8_t> d);

struct DiscoveryEntry {
  uint8_t trtype = 0;   // 3 = TCP
  uint8_t adrfam = 0;   // 1 = IPv4
  uint8_t subtype = 0;  // 1 = referral, 2 = NVM subsystem, 3 = current discovery subsystem
  uint8_t treq = 0;
  uint16_t portid = 0;
  uint16_t cntlid = 0;
  uint16_t asqsz = 0;
  std::string trsvcid, subnqn, traddr;
};
struct DiscoveryLog {
  uint64_t genctr = 0;
  uint64_t numrec = 0;
  uint16_t recfmt = 0;
  std::vector<DiscoveryEntry> entries;  // as many as the buffer holds, up to numrec
};
inline constexpr uint32_t discovery_header_size = 1024;
inline constexpr uint32_t discovery_entry_size = 1024;
DiscoveryLog parse_discovery_log(std::span<const uint8_t> d);

// Changed Namespace List: up to 1024 NSIDs, zero-terminated; {0xffffffff} = more than 1024.
std::vector<uint32_t> parse_changed_ns_list(std::span<const uint8_t> d);

}  // namespace initiator
