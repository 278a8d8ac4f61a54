/* usdtlat: the engine's own USDT points (engine/stats/usdt.hpp), attached on demand: command
 * latency arrival -> response queued, and the queue wait each io_work pass reports. */
#pragma once
#include "probes/probe_hist.h"

enum usdtlat_kind {
	USDTLAT_COMMAND = 0, /* cmd_arrival -> cmd_complete, timed in BPF */
	USDTLAT_QUEUE_WAIT = 1, /* queue_wait_end's wait_ns argument */
	USDTLAT_KINDS = 2,
};

struct usdtlat_key {
	__u32 kind;
};
