// Log pages: error, SMART / health, firmware slot, changed namespace list, ANA, discovery.
// Pages are built whole on the admin path (small, rare) and then cut at the host's offset.
#include "engine/core/log_page.hpp"

#include <cstring>
#include <vector>

#include "engine/core/handlers.hpp"
#include "engine/core/submission_queue.hpp"
#include "engine/core/target.hpp"
#include "engine/nvme/le.hpp"

namespace core {
namespace {

namespace st = nvme::status;
using nvme::LogPage;
using nvme::put_le;
using Page = std::vector<uint8_t>;

constexpr uint16_t cdw10_loc = 40, cdw12_loc = 48;
constexpr size_t error_entry_size = 64, smart_size = 512, fw_slot_size = 512;
constexpr size_t disc_header = 1024, disc_entry = 1024;

uint8_t lid_of(const Request& r) { return r.sqe.cdw(10) & 0xff; }
uint8_t lsp_of(const Request& r) { return (r.sqe.cdw(10) >> 8) & 0x7f; }
uint64_t lpo_of(const Request& r) { return r.sqe.cdw(12) | (uint64_t{r.sqe.cdw(13)} << 32); }

Page smart_page(const Controller& c) {
  Page p(smart_size, 0);
  const auto s = c.smart();
  put_le<uint16_t>(p.data(), 1, 300);  // composite temperature, kelvin
  p[3] = 100;                          // available spare %
  p[4] = 10;                           // spare threshold %
  put_le<uint64_t>(p.data(), 32, s.data_units_read);
  put_le<uint64_t>(p.data(), 48, s.data_units_written);
  put_le<uint64_t>(p.data(), 64, s.host_reads);
  put_le<uint64_t>(p.data(), 80, s.host_writes);
  return p;
}

Page firmware_page() {
  Page p(fw_slot_size, 0);
  p[0] = 1;  // active firmware in slot 1
  nvme::put_ascii(p.data(), 8, 8, "0.1.0");
  return p;
}

Page changed_ns_page(Controller& c) {
  Page p(4096, 0);
  const auto ids = c.take_changed_nsids();
  if (ids.size() > 1024) {
    put_le<uint32_t>(p.data(), 0, 0xffffffff);  // more than fit: host rescans all
    return p;
  }
  for (size_t i = 0; i < ids.size(); ++i) put_le<uint32_t>(p.data(), 4 * i, ids[i]);
  return p;
}

// One ANA group (ID 1, optimized) holding every namespace.
Page ana_page(const Subsystem& s, bool groups_only, uint64_t chgcnt) {
  const auto ids = s.active_nsids();
  const size_t n = groups_only ? 0 : ids.size();
  Page p(16 + 32 + 4 * n, 0);
  put_le<uint64_t>(p.data(), 0, chgcnt);
  put_le<uint16_t>(p.data(), 8, 1);
  uint8_t* g = p.data() + 16;
  put_le<uint32_t>(g, 0, 1);
  put_le<uint32_t>(g, 4, static_cast<uint32_t>(n));
  put_le<uint64_t>(g, 8, chgcnt);
  g[16] = 0x01;  // ANA optimized
  for (size_t i = 0; i < n; ++i) put_le<uint32_t>(g, 32 + 4 * i, ids[i]);
  return p;
}

void put_disc_entry(uint8_t* e, const ListenerAddress& l, uint8_t subtype, const std::string& nqn) {
  constexpr uint8_t treq_disable_sqflow = 1u << 2;
  e[0] = l.trtype;
  e[1] = l.adrfam;
  e[2] = subtype;
  e[3] = treq_disable_sqflow;
  put_le<uint16_t>(e, 4, l.portid);
  put_le<uint16_t>(e, 6, 0xffff);  // dynamic controller model
  put_le<uint16_t>(e, 8, 32);      // admin max SQ size
  nvme::put_ascii(e, 32, 32, l.trsvcid, '\0');
  nvme::put_ascii(e, 256, 256, nqn, '\0');
  nvme::put_ascii(e, 512, 256, l.traddr, '\0');
  // TSAS for TCP: SECTYPE 0 (no security) — already zero.
  if (l.trtype == trtype_rdma) {
    // TSAS for RDMA: reliable connected QP, no provider type specified, RDMA_CM (as nvmet).
    constexpr size_t tsas = 768;
    e[tsas] = 1, e[tsas + 1] = 1, e[tsas + 2] = 1;
  }
}

Page discovery_page(const Target& t, const std::string& hostnqn) {
  constexpr uint8_t subtype_nvme = 2, subtype_current_discovery = 3;
  const auto listeners = t.listeners();
  std::vector<std::pair<uint8_t, std::string>> subs;
  for (auto& s : t.subsystems())
    if (s->host_allowed(hostnqn)) subs.emplace_back(subtype_nvme, s->nqn());
  subs.emplace_back(subtype_current_discovery, nvme::discovery_nqn);
  const size_t numrec = subs.size() * listeners.size();
  Page p(disc_header + numrec * disc_entry, 0);
  put_le<uint64_t>(p.data(), 0, t.genctr());
  put_le<uint64_t>(p.data(), 8, numrec);
  size_t i = 0;
  for (const auto& [subtype, nqn] : subs)
    for (const auto& l : listeners) put_disc_entry(p.data() + disc_header + disc_entry * i++, l, subtype, nqn);
  return p;
}

bool supported(const Subsystem& s, uint8_t lid) {
  if (s.is_discovery()) return lid == static_cast<uint8_t>(LogPage::discovery);
  switch (static_cast<LogPage>(lid)) {
    case LogPage::error:
    case LogPage::smart:
    case LogPage::firmware_slot:
    case LogPage::changed_namespace_list:
    case LogPage::ana:
      return true;
    default:
      return false;
  }
}

}  // namespace

nvme::Status prepare_log_page(SubmissionQueue& sq, Request& req) {
  if (!supported(sq.controller()->subsystem(), lid_of(req))) return st::invalid_field.at(cdw10_loc);
  if (lpo_of(req) % 4) return st::invalid_field.at(cdw12_loc);
  const uint64_t numd = ((uint64_t{req.sqe.cdw(11) & 0xffff} << 16) | (req.sqe.cdw(10) >> 16)) + 1;
  if (numd * 4 > req.buf_cap) return st::invalid_field.at(cdw10_loc);
  req.dir = DataDir::controller_to_host;
  req.transfer_len = static_cast<uint32_t>(numd * 4);
  return st::success;
}

void execute_log_page(SubmissionQueue& sq, Request& req) {
  Controller& c = *sq.controller();
  Page page;
  switch (static_cast<LogPage>(lid_of(req))) {
    case LogPage::error: page.assign(error_entry_size, 0); break;  // no entries recorded
    case LogPage::smart: page = smart_page(c); break;
    case LogPage::firmware_slot: page = firmware_page(); break;
    case LogPage::changed_namespace_list: page = changed_ns_page(c); break;
    case LogPage::ana: page = ana_page(c.subsystem(), lsp_of(req) & 1, sq.target().genctr()); break;
    case LogPage::discovery: page = discovery_page(sq.target(), c.hostnqn()); break;
    default: return sq.complete(req, st::invalid_field.at(cdw10_loc));
  }
  const uint64_t lpo = lpo_of(req);
  if (lpo > page.size()) return sq.complete(req, st::invalid_field.at(cdw12_loc));
  reply_data(req, page.data() + lpo, static_cast<uint32_t>(page.size() - lpo));
  sq.complete(req, st::success);
}

}  // namespace core
