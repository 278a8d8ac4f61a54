#include "engine/core/identify.hpp"

#include <bit>
#include <cstring>

#include "engine/core/submission_queue.hpp"
#include "engine/core/target.hpp"
#include "engine/nvme/le.hpp"

namespace core {
namespace {

namespace id_ctrl {  // Identify Controller byte offsets
inline constexpr size_t sn = 4, mn = 24, fr = 64, rab = 72, cmic = 76, mdts = 77, cntlid = 78,
                        ver = 80, oaes = 92, cntrltype = 111, acl = 258, aerl = 259, frmw = 260,
                        lpa = 261, kas = 320, anatt = 342, anacap = 343,
                        anagrpmax = 344, nanagrpid = 348, sqes = 512, cqes = 513, maxcmd = 514,
                        nn = 516, oncs = 520, vwc = 525, nvscc = 530, sgls = 536, mnan = 540, subnqn = 768,
                        ioccsz = 1792, iorcsz = 1796, msdbd = 1803;
}

constexpr uint8_t cmic_multi_port = 1u << 0, cmic_multi_ctrl = 1u << 1, cmic_ana = 1u << 3;
constexpr uint32_t oaes_ns_attr = 1u << 8;
constexpr uint16_t oncs_compare = 1u << 0, oncs_dsm = 1u << 2, oncs_write_zeroes = 1u << 3;
constexpr uint32_t sgls_supported = 1u << 0, sgls_keyed = 1u << 2, sgls_offset = 1u << 20;
constexpr uint8_t lpa_extended_data = 1u << 2;
constexpr uint16_t kas_100ms = 10;  // keep-alive granularity: 1 s in 100 ms units
constexpr const char* firmware_revision = "0.1.0";

std::string serial_or_default(const Subsystem& s) {
  if (!s.serial().empty()) return s.serial();
  // A stable serial derived from the NQN: hosts use SN+MN to match paths.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s.nqn()) h = (h ^ c) * 0x100000001b3ull;
  char buf[21];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

void fill_identify_controller(const SubmissionQueue& sq, uint8_t* out) {
  using nvme::put_le;
  std::memset(out, 0, identify_size);
  const Controller& c = *sq.controller();
  const Subsystem& s = c.subsystem();
  const Limits& lim = sq.target().limits();
  const bool disc = s.is_discovery();

  nvme::put_ascii(out, id_ctrl::sn, 20, serial_or_default(s));
  nvme::put_ascii(out, id_ctrl::mn, 40, s.model());
  nvme::put_ascii(out, id_ctrl::fr, 8, firmware_revision);
  out[id_ctrl::rab] = 6;
  put_le<uint16_t>(out, id_ctrl::cntlid, c.cntlid());
  put_le<uint32_t>(out, id_ctrl::ver, nvme::version_1_3);
  out[id_ctrl::cntrltype] = disc ? 2 : 1;
  out[id_ctrl::mdts] = static_cast<uint8_t>(std::countr_zero(lim.mdts_bytes / 4096));
  out[id_ctrl::acl] = 3;
  out[id_ctrl::aerl] = static_cast<uint8_t>(max_parked_aers - 1);
  out[id_ctrl::lpa] = lpa_extended_data;
  put_le<uint16_t>(out, id_ctrl::kas, kas_100ms);
  out[id_ctrl::sqes] = (6 << 4) | 6;
  out[id_ctrl::cqes] = (4 << 4) | 4;
  put_le<uint16_t>(out, id_ctrl::maxcmd, static_cast<uint16_t>(lim.queue_depth));
  put_le<uint32_t>(out, id_ctrl::sgls, sgls_supported | sgls_offset | (sq.transport().keyed_sgls() ? sgls_keyed : 0));
  nvme::put_ascii(out, id_ctrl::subnqn, 256, s.nqn(), '\0');
  put_le<uint32_t>(out, id_ctrl::ioccsz, (disc ? 8192 + 64 : lim.io_ccsz) / 16);
  put_le<uint32_t>(out, id_ctrl::iorcsz, 1);
  out[id_ctrl::msdbd] = 1;
  if (disc) {
    put_le<uint32_t>(out, id_ctrl::oaes, 0);  // the engine raises no discovery log change events
    return;
  }
  out[id_ctrl::cmic] = cmic_multi_port | cmic_multi_ctrl | cmic_ana;
  put_le<uint32_t>(out, id_ctrl::oaes, oaes_ns_attr);  // the one event the engine raises
  out[id_ctrl::frmw] = (1 << 1) | 1;  // one slot, read-only
  out[id_ctrl::anatt] = 10;
  out[id_ctrl::anacap] = 1u << 0;     // reports the optimized state
  put_le<uint32_t>(out, id_ctrl::anagrpmax, 1);
  put_le<uint32_t>(out, id_ctrl::nanagrpid, 1);
  put_le<uint32_t>(out, id_ctrl::nn, s.nn());
  put_le<uint32_t>(out, id_ctrl::mnan, s.nn());  // hosts reject ANA reporting with MNAN 0
  put_le<uint16_t>(out, id_ctrl::oncs, oncs_compare | oncs_dsm | oncs_write_zeroes);
  out[id_ctrl::vwc] = 1;
  out[id_ctrl::nvscc] = 1;
}

void fill_active_ns_list(const Subsystem& s, uint32_t after_nsid, uint8_t* out) {
  std::memset(out, 0, identify_size);
  size_t n = 0;
  for (uint32_t id : s.active_nsids()) {
    if (id <= after_nsid) continue;
    if (n == identify_size / 4) break;
    nvme::put_le<uint32_t>(out, 4 * n++, id);
  }
}

void fill_ns_descriptors(const Namespace& ns, uint8_t* out) {
  std::memset(out, 0, identify_size);
  size_t off = 0;
  auto put = [&](uint8_t nidt, const uint8_t* id, uint8_t len) {
    out[off] = nidt;
    out[off + 1] = len;
    std::memcpy(out + off + 4, id, len);
    off += 4 + len;
  };
  const auto eui = ns.eui64();
  const auto nguid = ns.nguid();
  put(1, eui.data(), 8);
  put(2, nguid.data(), 16);
  put(3, ns.uuid().data(), 16);
}

}  // namespace core
