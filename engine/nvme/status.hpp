#pragma once
// NVMe completion status as a value: SCT, SC, DNR, and which command field was wrong
// (the error log's "parameter error location"). Internal errors are not Status.
#include <cstdint>

namespace nvme {

enum class Sct : uint8_t { generic = 0, command_specific = 1, media = 2, path = 3, vendor = 7 };

struct Status {
  Sct sct = Sct::generic;
  uint8_t sc = 0;
  bool dnr = false;
  uint16_t error_loc = 0xffff;  // byte offset in the SQE of the offending field, 0xffff = n/a

  constexpr bool ok() const { return sct == Sct::generic && sc == 0; }
  // The 15-bit Status Field as placed in CQE bits 15:1.
  constexpr uint16_t field() const {
    return static_cast<uint16_t>(sc | (static_cast<uint16_t>(sct) << 8) | (dnr ? 0x4000 : 0));
  }
  constexpr Status at(uint16_t loc) const {
    Status s = *this;
    s.error_loc = loc;
    return s;
  }
  static constexpr Status from_field(uint16_t f) {
    return Status{static_cast<Sct>((f >> 8) & 7), static_cast<uint8_t>(f & 0xff), (f & 0x4000) != 0};
  }
  friend constexpr bool operator==(const Status& a, const Status& b) {
    return a.sct == b.sct && a.sc == b.sc;
  }
};

namespace status {
inline constexpr Status success{};
inline constexpr Status invalid_opcode{Sct::generic, 0x01, true};
inline constexpr Status invalid_field{Sct::generic, 0x02, true};
inline constexpr Status command_id_conflict{Sct::generic, 0x03, true};
inline constexpr Status data_transfer_error{Sct::generic, 0x04, false};
inline constexpr Status internal_error{Sct::generic, 0x06, false};
inline constexpr Status abort_requested{Sct::generic, 0x07, false};
inline constexpr Status abort_sq_deletion{Sct::generic, 0x08, false};
inline constexpr Status invalid_namespace{Sct::generic, 0x0b, true};
inline constexpr Status command_sequence_error{Sct::generic, 0x0c, true};
inline constexpr Status sgl_length_invalid{Sct::generic, 0x0f, true};
inline constexpr Status sgl_type_invalid{Sct::generic, 0x11, true};
inline constexpr Status sgl_offset_invalid{Sct::generic, 0x16, true};
inline constexpr Status lba_out_of_range{Sct::generic, 0x80, true};
inline constexpr Status capacity_exceeded{Sct::generic, 0x81, true};
inline constexpr Status namespace_not_ready{Sct::generic, 0x82, false};

inline constexpr Status invalid_log_page{Sct::command_specific, 0x09, true};
inline constexpr Status async_event_limit_exceeded{Sct::command_specific, 0x05, true};
inline constexpr Status feature_not_saveable{Sct::command_specific, 0x0d, true};
inline constexpr Status connect_incompatible_format{Sct::command_specific, 0x80, true};
inline constexpr Status connect_controller_busy{Sct::command_specific, 0x81, true};
inline constexpr Status connect_invalid_parameters{Sct::command_specific, 0x82, true};
inline constexpr Status connect_invalid_host{Sct::command_specific, 0x84, true};
inline constexpr Status invalid_queue_type{Sct::command_specific, 0x85, true};  // Disconnect on the admin queue

inline constexpr Status write_fault{Sct::media, 0x80, false};
inline constexpr Status unrecovered_read_error{Sct::media, 0x81, false};
inline constexpr Status compare_failure{Sct::media, 0x85, false};
}  // namespace status

// The one place an errno from a backend becomes an NVMe status (never a silent success).
Status status_from_errno(int err, bool is_read);

}  // namespace nvme
