#include "loader/prog_report.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <string.h>

int cw_prog_report(struct bpf_object *obj, cw_prog_report_fn fn, void *ctx)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, obj) {
		struct cw_prog_report r = { .name = bpf_program__name(p) };
		int fd = bpf_program__fd(p);

		r.loaded = bpf_program__autoload(p) && fd >= 0;
		if (r.loaded) {
			struct bpf_prog_info info;
			__u32 len = sizeof(info);

			memset(&info, 0, sizeof(info));
			if (!bpf_obj_get_info_by_fd(fd, &info, &len))
				r.verified_insns = info.verified_insns;
		}
		fn(ctx, &r);
		n++;
	}
	return n;
}
