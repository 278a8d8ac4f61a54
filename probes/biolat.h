/* biolat: block I/O latency, request issued to the driver -> completed, per disk. */
#pragma once
#include "probes/probe_hist.h"

#define BIOLAT_MAX_DISKS 64 /* disks one biolat can be limited to */

struct biolat_key {
	__u32 dev; /* the kernel's dev_t of the disk (major << 20 | minor); 0 for the total */
};
