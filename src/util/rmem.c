#define _GNU_SOURCE
#include "util/rmem.h"

#include <errno.h>
#include <sys/uio.h>

static int pid_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(uintptr_t)ctx;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return errno == ESRCH ? -ESRCH : (errno == EPERM ? -EPERM : -EFAULT);
	return (size_t)n == len ? 0 : -EFAULT;
}

void cw_rmem_init_pid(struct cw_rmem *m, pid_t pid)
{
	m->read = pid_read;
	m->ctx = (void *)(uintptr_t)pid;
	m->reads = 0;
	m->bytes = 0;
}

int cw_rmem_read(struct cw_rmem *m, uint64_t addr, void *buf, size_t len)
{
	if (!len)
		return 0;
	if (len > CW_RMEM_MAX_READ)
		return -E2BIG;
	if (!cw_rmem_ptr_ok(addr) || addr + len > (1ull << 47))
		return -EFAULT;
	m->reads++;
	m->bytes += len;
	return m->read(m->ctx, addr, buf, len);
}

int cw_rmem_read_u64(struct cw_rmem *m, uint64_t addr, uint64_t *out)
{
	return cw_rmem_read(m, addr, out, sizeof(*out));
}

int cw_rmem_read_ptr(struct cw_rmem *m, uint64_t addr, uint64_t *out)
{
	int err = cw_rmem_read_u64(m, addr, out);

	if (err)
		return err;
	return cw_rmem_ptr_ok(*out) ? 0 : -EFAULT;
}
