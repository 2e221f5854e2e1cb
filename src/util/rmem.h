/* Remote memory: how causeway reads another process's memory.
 *
 * Everything read through this interface is hostile input: the target can
 * be mid-update, exiting, or reuse an address for something else. Reads are
 * capped in size, addresses are checked to be canonical user addresses, and
 * callers copy before they parse. Tests and fuzzers plug a fake memory in
 * through the same struct, so the walker never knows which one it reads. */
#ifndef CW_UTIL_RMEM_H
#define CW_UTIL_RMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Largest single read: a line table or a thread state fits comfortably;
 * anything larger is treated as corrupt rather than copied. */
#define CW_RMEM_MAX_READ (64u * 1024u)

struct cw_rmem {
	/* Reads exactly len bytes at addr into buf. Returns 0 or -errno
	 * (-EFAULT for an unmapped or partial read, -ESRCH for a gone pid). */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
	uint64_t reads; /* counters, for benchmarks and debugging */
	uint64_t bytes;
};

/* A process reader backed by process_vm_readv(2). */
void cw_rmem_init_pid(struct cw_rmem *m, pid_t pid);

/* Whether addr can be a user-space pointer on x86-64/aarch64 with 4-level
 * paging (47-bit user half): non-NULL, below 2^47, and not in page zero. */
static inline int cw_rmem_ptr_ok(uint64_t addr)
{
	return addr >= 4096 && addr < (1ull << 47);
}

/* Validated read: checks the pointer and the length cap, then reads. */
int cw_rmem_read(struct cw_rmem *m, uint64_t addr, void *buf, size_t len);
int cw_rmem_read_u64(struct cw_rmem *m, uint64_t addr, uint64_t *out);
/* Reads a pointer and checks it with cw_rmem_ptr_ok (-EFAULT if not). */
int cw_rmem_read_ptr(struct cw_rmem *m, uint64_t addr, uint64_t *out);

#endif
