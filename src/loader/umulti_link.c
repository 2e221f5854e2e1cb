#include "loader/umulti_link.h"

#include <errno.h>
#include <linux/bpf.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CW_BPF_F_UPROBE_MULTI_RETURN 1u

/* The uprobe_multi member of union bpf_attr's link_create (Linux 6.6). */
struct cw_link_create_umulti {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 umulti_flags;
	__u32 pid;
};

int cw_link_umulti(int prog_fd, uint32_t attach_type, const char *path, const uint64_t *offs,
		   const uint64_t *cookies, uint32_t n, int ret)
{
	union bpf_attr attr;
	struct cw_link_create_umulti *lc = (struct cw_link_create_umulti *)&attr;
	int fd;

	_Static_assert(sizeof(struct cw_link_create_umulti) <= sizeof(union bpf_attr), "attr size");
	memset(&attr, 0, sizeof(attr));
	lc->prog_fd = (__u32)prog_fd;
	lc->attach_type = attach_type;
	lc->path = (__u64)(uintptr_t)path;
	lc->offsets = (__u64)(uintptr_t)offs;
	lc->cookies = (__u64)(uintptr_t)cookies;
	lc->cnt = n;
	lc->umulti_flags = ret ? CW_BPF_F_UPROBE_MULTI_RETURN : 0;
	lc->pid = 0; /* every process mapping the file */
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}
