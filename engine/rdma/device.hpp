#pragma once
// Whether this host can serve NVMe/RDMA at all, said in words an operator can act on. Without an
// RDMA device (no NIC, no soft-RoCE link) or without the kernel's RDMA CM (rdma_ucm), rdma-core
// still links and loads; the listener then reports why it cannot listen, and nothing else stops.
#include <string>

namespace rdma {

// "" when at least one RDMA device is present, otherwise why not (starting "no RDMA device").
std::string rdma_unavailable();

// The hint appended to every "no RDMA device" message.
inline constexpr const char* soft_rdma_hint =
    "load a NIC's RDMA driver, or create a soft-RoCE link: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0";

}  // namespace rdma
