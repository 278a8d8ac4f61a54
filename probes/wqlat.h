/* wqlat: kernel workqueue latency, queue_work -> the work item starts executing. */
#pragma once
#include "probes/probe_hist.h"

#define WQLAT_NAME_LEN 32 /* WQ_NAME_LEN */

struct wqlat_key {
	char wq[WQLAT_NAME_LEN]; /* workqueue name; all zero for the total when not per workqueue */
};
