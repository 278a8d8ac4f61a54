#include "engine/initiator/identify.hpp"

#include <algorithm>

#include "engine/nvme/le.hpp"

namespace initiator {
namespace {

using nvme::get_le;

std::string trimmed(std::span<const uint8_t> d, size_t off, size_t width) {
  std::string s(nvme::get_cstr(d.data(), off, width));
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

ControllerIdentity parse_identify_controller(std::span<const uint8_t> d) {
  ControllerIdentity c;
  if (d.size() < identify_size) return c;
  const auto* p = d.data();
  c.vid = get_le<uint16_t>(p, 0);
  c.sn = trimmed(d, 4, 20);
  c.mn = trimmed(d, 24, 40);
  c.fr = trimmed(d, 64, 8);
  c.mdts = p[77];
  c.cntlid = get_le<uint16_t>(p, 78);
  c.ver = get_le<uint32_t>(p, 80);
  c.kas = get_le<uint16_t>(p, 320);
  c.sqes = p[512];
  c.cqes = p[513];
  c.maxcmd = get_le<uint16_t>(p, 514);
  c.nn = get_le<uint32_t>(p, 516);
  c.oncs = get_le<uint16_t>(p, 520);
  c.vwc = p[525];
  c.sgls = get_le<uint32_t>(p, 536);
  c.subnqn = std::string(nvme::get_cstr(p, 768, 256));
  c.ioccsz = get_le<uint32_t>(p, 1792);
  c.iorcsz = get_le<uint32_t>(p, 1796);
  c.icdoff = get_le<uint16_t>(p, 1800);
  c.msdbd = p[1803];
  return c;
}

NamespaceIdentity parse_identify_namespace(std::span<const uint8_t> d) {
  NamespaceIdentity n;
  if (d.size() < identify_size) return n;
  const auto* p = d.data();
  n.nsze = get_le<uint64_t>(p, 0);
  n.ncap = get_le<uint64_t>(p, 8);
  n.nuse = get_le<uint64_t>(p, 16);
  n.nsfeat = p[24];
  n.nlbaf = p[25];
  n.flbas = p[26];
  // FLBAS bits 3:0 (and 6:5 for more than 16 formats) pick the LBA format; LBADS is byte 2.
  const unsigned fmt = (n.flbas & 0x0f) | ((n.flbas >> 5) & 0x3) << 4;
  const uint8_t lbads = p[128 + fmt * 4 + 2];
  n.block_size = lbads >= 9 && lbads < 32 ? 1u << lbads : 0;
  std::copy_n(p + 104, 16, n.nguid.begin());
  std::copy_n(p + 120, 8, n.eui64.begin());
  return n;
}

DiscoveryLog parse_discovery_log(std::span<const uint8_t> d) {
  DiscoveryLog log;
  if (d.size() < discovery_header_size) return log;
  log.genctr = get_le<uint64_t>(d.data(), 0);
  log.numrec = get_le<uint64_t>(d.data(), 8);
  log.recfmt = get_le<uint16_t>(d.data(), 16);
  const uint64_t fit = (d.size() - discovery_header_size) / discovery_entry_size;
  for (uint64_t i = 0; i < std::min(fit, log.numrec); ++i) {
    const uint8_t* e = d.data() + discovery_header_size + i * discovery_entry_size;
    const std::span<const uint8_t> es(e, discovery_entry_size);
    DiscoveryEntry x;
    x.trtype = e[0];
    x.adrfam = e[1];
    x.subtype = e[2];
    x.treq = e[3];
    x.portid = get_le<uint16_t>(e, 4);
    x.cntlid = get_le<uint16_t>(e, 6);
    x.asqsz = get_le<uint16_t>(e, 8);
    x.trsvcid = trimmed(es, 32, 32);
    x.subnqn = trimmed(es, 256, 256);
    x.traddr = trimmed(es, 512, 256);
    log.entries.push_back(std::move(x));
  }
  return log;
}

std::vector<uint32_t> parse_changed_ns_list(std::span<const uint8_t> d) {
  std::vector<uint32_t> out;
  for (size_t off = 0; off + 4 <= d.size(); off += 4) {
    const auto nsid = get_le<uint32_t>(d.data(), off);
    if (nsid == 0) break;
    out.push_back(nsid);
  }
  return out;
}

}  // namespace initiator
