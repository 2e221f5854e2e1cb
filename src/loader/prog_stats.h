/* Run time and run count of the BPF programs this process loaded, for
 * /metrics (causeway_bpf_program_*). The kernel counts them only while
 * statistics are enabled: kernel.bpf_stats_enabled=1, or a BPF_ENABLE_STATS
 * descriptor held open (`trace --bpf-stats`); otherwise both stay 0. */
#ifndef CW_LOADER_PROG_STATS_H
#define CW_LOADER_PROG_STATS_H

#include <stdint.h>

struct cw_prog_stat {
	char name[16]; /* BPF_OBJ_NAME_LEN */
	uint64_t run_time_ns, run_cnt;
};

/* Fills up to max entries from the program descriptors in /proc/self/fd,
 * one per program name (twins of one name are summed). Returns the count
 * or -errno. */
int cw_prog_stats(struct cw_prog_stat *out, int max);

/* Turns run-time statistics on for as long as the returned descriptor is
 * open (Linux 5.8+). Returns the descriptor or -errno. */
int cw_prog_stats_enable(void);

#endif
