#include "engine/rdma/device.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace rdma {

std::string rdma_unavailable() {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  const int err = errno;
  if (list) ibv_free_device_list(list);
  if (n > 0) return {};
  std::string why = "no RDMA device";
  // ENOSYS: the kernel has no verbs support at all (no ib_uverbs).
  if (!list && err) why += std::string(" (") + std::strerror(err) + ")";
  return why + "; " + soft_rdma_hint;
}

}  // namespace rdma
