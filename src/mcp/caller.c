/* Whose rights a stdio MCP tool runs with. `causeway mcp` may run as root
 * (sudo, or an assistant's launcher) for a user who could not read another
 * user's process: where then must not reach further than that user's own
 * gdb or py-spy would. The rule is the kernel's ptrace access check
 * (kernel/ptrace.c, __ptrace_may_access, Linux 6.x) for a caller without
 * privilege: the target's real, effective and saved uid and gid all equal
 * the caller's, and the target is dumpable; or the caller holds
 * CAP_SYS_PTRACE. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/mcp.h"

#define CAP_SYS_PTRACE_BIT 19 /* linux/capability.h */

/* The ids and effective capabilities in /proc/<pid>/status (pid 0: self).
 * uid and gid get the real, effective, saved and filesystem ids. */
static int proc_status(long pid, unsigned uid[4], unsigned gid[4], unsigned long long *capeff)
{
	char path[64], line[256];
	int got = 0;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u %u %u", &uid[0], &uid[1], &uid[2], &uid[3]) == 4)
			got |= 1;
		else if (sscanf(line, "Gid: %u %u %u %u", &gid[0], &gid[1], &gid[2], &gid[3]) == 4)
			got |= 2;
		else if (sscanf(line, "CapEff: %llx", capeff) == 1)
			got |= 4;
	}
	fclose(f);
	return got == 7 ? 0 : -EIO;
}

int cw_mcp_caller_from_fd(int fd, struct cw_mcp_caller *who)
{
	unsigned uid[4], gid[4];
	unsigned long long cap = 0;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int rc;

	memset(who, 0, sizeof(*who));
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) && len == sizeof(cr) && cr.pid > 0) {
		/* The peer's capabilities as they are now: a peer that is gone
		 * counts as holding none. */
		who->uid = cr.uid;
		who->gid = cr.gid;
		if (!proc_status(cr.pid, uid, gid, &cap))
			who->cap_sys_ptrace = !!(cap & (1ULL << CAP_SYS_PTRACE_BIT));
		who->known = 1;
		return 0;
	}
	if ((rc = proc_status(0, uid, gid, &cap)))
		return rc;
	/* The real ids: a set-id or capability-raised causeway still answers
	 * for the user who started it. */
	who->uid = uid[0];
	who->gid = gid[0];
	who->cap_sys_ptrace = !!(cap & (1ULL << CAP_SYS_PTRACE_BIT));
	who->known = 1;
	return 0;
}

int cw_mcp_may_ptrace(const struct cw_mcp_caller *who, long pid, char *err, size_t errlen)
{
	unsigned uid[4], gid[4];
	unsigned long long cap;
	char path[64];
	struct stat st;
	int rc;

	if (!who->known || who->cap_sys_ptrace)
		return 0;
	if ((rc = proc_status(pid, uid, gid, &cap))) {
		snprintf(err, errlen, "no process %ld", pid);
		return rc == -ENOENT ? -ESRCH : rc;
	}
	for (int i = 0; i < 3; i++) {
		if (uid[i] != who->uid || gid[i] != who->gid) {
			snprintf(err, errlen,
				 "process %ld belongs to uid %u, and the caller (uid %u) may not trace it: where "
				 "reads only processes of the calling user (or any, for a caller with CAP_SYS_PTRACE)",
				 pid, uid[i] != who->uid ? uid[i] : uid[0], who->uid);
			return -EPERM;
		}
	}
	/* A process that is not dumpable (set-id, or prctl(PR_SET_DUMPABLE, 0))
	 * has its /proc directory owned by root instead of its user. */
	snprintf(path, sizeof(path), "/proc/%ld", pid);
	if (stat(path, &st) || st.st_uid != who->uid) {
		snprintf(err, errlen, "process %ld is not dumpable, and the caller (uid %u) may not trace it", pid,
			 who->uid);
		return -EPERM;
	}
	return 0;
}
