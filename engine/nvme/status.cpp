#include "engine/nvme/status.hpp"

#include <cerrno>

namespace nvme {

Status status_from_errno(int err, bool is_read) {
  switch (err) {
    case 0:
      return status::success;
    case ENOSPC:
      return status::capacity_exceeded;
    case EINVAL:
    case EOPNOTSUPP:
      return status::invalid_field;
    case ERANGE:
    case EOVERFLOW:
      return status::lba_out_of_range;
    case EIO:
    case ENODATA:
    case EBADMSG:
      return is_read ? status::unrecovered_read_error : status::write_fault;
    default:
      return status::internal_error;
  }
}

}  // namespace nvme
