#pragma once
// engine/initiator: an NVMe/TCP and NVMe/RDMA host (no Qt); shares the PDU codec in engine/tcp/
// and the NVMe/RDMA wire formats in engine/rdma/ with the target. Queues of either transport
// implement Queue (queue.hpp); the RDMA one lives in rdma/. Used by the integration tests and by
// `nvmetune perf`.
//
//   auto ctrl = initiator::Controller::connect(target);        // admin queue, enabled
//   auto q = (*ctrl)->create_io_queue();                        // one TCP connection per queue
//   q->submit({initiator::Op::write, nsid, slba, nlb0, buf, false, {on_done, ctx}});
//   while (...) q->poll();                                      // or q->wait(ms)
//
// Threading: a Controller and each TcpQueue are driven by one thread at a time (queues of one
// controller may live on different threads). Nothing allocates or locks per I/O.
#include "engine/initiator/commands.hpp"
#include "engine/initiator/controller.hpp"
#include "engine/initiator/error.hpp"
#include "engine/initiator/identify.hpp"
#include "engine/initiator/tcp/tcp_queue.hpp"
#include "engine/initiator/queue.hpp"
#include "engine/initiator/sync.hpp"
#include "engine/initiator/target.hpp"
