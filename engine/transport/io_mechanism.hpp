#pragma once
// How a transport's queues are told there is work, chosen by name in the threading section
// ("epoll" | "io_uring"). A transport with one way of its own (RDMA: the completion channel's
// fd) ignores the choice.
#include <cstdint>

namespace transport {

// TCP: readiness through epoll and non-blocking recv()/sendmsg(), or io_uring (multishot
// receive into provided buffers on the queue's ring; tcp/uring_socket.hpp).
enum class IoMechanism : uint8_t { epoll, io_uring };

}  // namespace transport
