/* BPF program statistics of this process (prog_stats.h). */
#define _GNU_SOURCE
#include "loader/prog_stats.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cw_prog_stats(struct cw_prog_stat *out, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		char path[64], link[64];
		ssize_t k;
		int fd, i;

		if (e->d_name[0] == '.')
			continue;
		fd = (int)strtol(e->d_name, NULL, 10);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		k = readlink(path, link, sizeof(link) - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		if (strcmp(link, "anon_inode:bpf-prog"))
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		for (i = 0; i < n; i++)
			if (!strncmp(out[i].name, info.name, sizeof(out[i].name)))
				break;
		if (i == n) {
			if (n == max)
				continue;
			memset(&out[n], 0, sizeof(out[n]));
			memcpy(out[n].name, info.name, sizeof(out[n].name) - 1);
			n++;
		}
		out[i].run_time_ns += info.run_time_ns;
		out[i].run_cnt += info.run_cnt;
	}
	closedir(d);
	return n;
}

int cw_prog_stats_enable(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	return fd < 0 ? -errno : fd;
}
