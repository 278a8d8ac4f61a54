#pragma once
// The engine's USDT points (systemtap-sdt-dev's <sys/sdt.h>), provider "nvmetune":
//   cmd_arrival(queue, cid, opcode)   a command's capsule (and in-capsule data) is complete
//   queue_wait_end(queue, wait_ns)    an io_work pass starts; wait_ns = readiness -> start
//   cmd_complete(queue, cid, ns)      its response is queued; ns = arrival -> response
// `queue` is the queue object's address (unique while connected). Each point is one nop and a
// note in .note.stapsdt until a tracer attaches (probes/usdtlat, bpftrace, perf probe sdt_*);
// bench/usdt_bench measures what an unattached point costs.
#include <sys/sdt.h>

// On x86-64 the point is the 5-byte nop 0f 1f 44 00 00 instead of sdt.h's 1-byte one:
// the kernel can then turn an attached uprobe into a call instead of a trap (issue 11 measured
// ~3.5 us per hit for this form against ~30 us for a plain uprobe). sdt.h defines _SDT_NOP
// unconditionally; it is expanded where a point is used, so redefining it here is enough.
#if defined(__x86_64__)
#undef _SDT_NOP
// Spelled as bytes (gas would shorten "nopl 0x0(%rax,%rax,1)" to 4), without commas (this is
// a macro argument inside sdt.h).
#define _SDT_NOP .byte 0x0f; .byte 0x1f; .byte 0x44; .byte 0x00; .byte 0x00
#endif

#define NVMT_USDT2(name, a, b) STAP_PROBE2(nvmetune, name, a, b)
#define NVMT_USDT3(name, a, b, c) STAP_PROBE3(nvmetune, name, a, b, c)
