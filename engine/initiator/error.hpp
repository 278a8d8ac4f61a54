#pragma once
// Errors of the NVMe/TCP host as values: an NVMe completion status, a transport failure
// (socket errors, the target closing the connection), an NVMe/TCP protocol violation (ours
// detected, or reported by the target's C2HTermReq), or a timeout. Never thrown.
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "engine/nvme/spec.hpp"
#include "engine/nvme/status.hpp"
#include "engine/tcp/pdu.hpp"

namespace initiator {

struct Error {
  enum class Kind : uint8_t {
    nvme,       // the command completed with a non-success status (status, cqe)
    transport,  // socket error or the connection was closed (err = errno, 0 on EOF)
    protocol,   // NVMe/TCP violation (fes, fei); from_target = it came in a C2HTermReq
    timeout,    // nothing within the caller's deadline
    usage,      // the call was not valid in this state (queue full, queue failed, bad argument)
  };

  Kind kind = Kind::usage;
  nvme::Status status{};  // Kind::nvme
  nvme::Cqe cqe{};        // Kind::nvme: the whole completion (dw0 carries e.g. Connect's IATTR/IPO)
  int err = 0;            // Kind::transport
  tcp::Fes fes{};         // Kind::protocol
  uint32_t fei = 0;       // Kind::protocol
  bool from_target = false;
  std::string message;

  static Error from_status(nvme::Status st, const nvme::Cqe& cqe, std::string what);
  static Error transport(int err, std::string what);
  static Error protocol(tcp::Fes fes, uint32_t fei, bool from_target, std::string what);
  static Error timeout(std::string what);
  static Error usage(std::string what);

  // One line for logs and test failure messages.
  std::string to_string() const;
};

// A value or an Error (std::expected is C++23; this is the part of it we need).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : _v(std::move(value)) {}  // NOLINT: implicit like std::expected
  Result(Error error) : _v(std::move(error)) {}  // NOLINT

  bool ok() const { return _v.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(_v); }
  const T& value() const& { return std::get<0>(_v); }
  T&& value() && { return std::get<0>(std::move(_v)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(_v); }

 private:
  std::variant<T, Error> _v;
};

// The value of calls that return nothing but may fail: Result<Ok>.
struct Ok {};

}  // namespace initiator
