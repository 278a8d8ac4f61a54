#include "engine/initiator/error.hpp"

#include <cstdio>
#include <cstring>

namespace initiator {

Error Error::from_status(nvme::Status st, const nvme::Cqe& cqe, std::string what) {
  Error e;
  e.kind = Kind::nvme;
  e.status = st;
  e.cqe = cqe;
  e.message = std::move(what);
  return e;
}

Error Error::transport(int err, std::string what) {
  Error e;
  e.kind = Kind::transport;
  e.err = err;
  e.message = std::move(what);
  return e;
}

Error Error::protocol(tcp::Fes fes, uint32_t fei, bool from_target, std::string what) {
  Error e;
  e.kind = Kind::protocol;
  e.fes = fes;
  e.fei = fei;
  e.from_target = from_target;
  e.message = std::move(what);
  return e;
}

Error Error::timeout(std::string what) {
  Error e;
  e.kind = Kind::timeout;
  e.message = std::move(what);
  return e;
}

Error Error::usage(std::string what) {
  Error e;
  e.kind = Kind::usage;
  e.message = std::move(what);
  return e;
}

std::string Error::to_string() const {
  char buf[160];
  switch (kind) {
    case Kind::nvme:
      std::snprintf(buf, sizeof buf, "NVMe status SCT %u SC 0x%02x%s (dw0 0x%08x)",
                    static_cast<unsigned>(status.sct), status.sc, status.dnr ? " DNR" : "", cqe.dw0);
      break;
    case Kind::transport:
      std::snprintf(buf, sizeof buf, "transport error%s%s", err ? ": " : "", err ? std::strerror(err) : "");
      break;
    case Kind::protocol:
      std::snprintf(buf, sizeof buf, "NVMe/TCP protocol error FES 0x%02x FEI %u (%s)",
                    static_cast<unsigned>(fes), fei, from_target ? "C2HTermReq from target" : "detected by host");
      break;
    case Kind::timeout:
      std::snprintf(buf, sizeof buf, "timeout");
      break;
    case Kind::usage:
      std::snprintf(buf, sizeof buf, "not possible");
      break;
  }
  return message.empty() ? std::string(buf) : message + ": " + buf;
}

}  // namespace initiator
