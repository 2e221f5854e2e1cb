/* umulti_link: BPF_LINK_CREATE for uprobe_multi and uprobe session links
 * (Linux 6.6 and 6.12), made by hand: libbpf 1.1, the one Debian 12 and
 * the release files carry, predates both. */
#ifndef CW_LOADER_UMULTI_LINK_H
#define CW_LOADER_UMULTI_LINK_H

#include <stdint.h>

/* Kernel ABI (include/uapi/linux/bpf.h). */
#define CW_BPF_TRACE_UPROBE_MULTI 48
#define CW_BPF_TRACE_UPROBE_SESSION 57

/* One link of prog_fd on the n offsets of the file at path, each with its
 * cookie, for every process that maps it. attach_type is one of the two
 * above; ret (uprobe_multi only) makes the link fire at return. Returns
 * the link's descriptor or -errno. */
int cw_link_umulti(int prog_fd, uint32_t attach_type, const char *path, const uint64_t *offs,
		   const uint64_t *cookies, uint32_t n, int ret);

#endif
