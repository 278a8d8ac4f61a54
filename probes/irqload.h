/* irqload: hard IRQ count and time per IRQ line and CPU, softirq time per vector and CPU. */
#pragma once
#include "probes/probe_hist.h"

#define IRQLOAD_NAME_LEN 32
#define IRQLOAD_SOFTIRQS 16 /* NR_SOFTIRQS is 10; room for new vectors */

/* Key of the duration histograms: one for all hard IRQs, one per softirq vector. */
struct irqload_hist_key {
	__u32 softirq; /* 0: hard IRQs; else vector + 1 */
};

struct irqload_name {
	char name[IRQLOAD_NAME_LEN];
};
