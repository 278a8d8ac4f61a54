#pragma once
// The engine's USDT points (systemtap-sdt-dev's <sys/sdt.h>), provider "nvmetune":
//   cmd_arrival(queue, cid, opcode)   a command's capsule (and in-capsule data) is complete
//   queue_wait_end(queue, wait_ns)    an io_work pass starts; wait_ns = readiness -> start
//   cmd_complete(queue, cid, ns)      its response is queued; ns = arrival -> response
// `queue` is the queue object's address (unique while connected). Each point is one nop and a
// note in .note.stapsdt until a tracer attaches (probes/usdtlat, bpftrace, perf probe sdt_*);
// bench/usdt_bench measures what an unattached point costs.
#include <sys/sdt.h>

#define NVMT_USDT2(name, a, b) STAP_PROBE2(nvmetune, name, a, b)
#define NVMT_USDT3(name, a, b, c) STAP_PROBE3(nvmetune, name, a, b, c)
