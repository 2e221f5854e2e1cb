/* The fallbacks in effect for this trace, one line each at start: what
 * the kernel lacks, what trace uses instead and what that costs
 * (loader/kernel_features.c). A feature trace would not have used here
 * (sessions when every process is traced, uprobe_multi under
 * --no-uprobe-multi) is not named. */
#include "loader/kernel_features.h"
#include "trace/session.h"
#include "trace/trace.h"

static int relevant(const struct trace *t, enum cw_kfeature f)
{
	int filtered = t->o.command || t->o.npids || t->o.ntenants;

	switch (f) {
	case CW_KF_UPROBE_MULTI:
		return !t->o.no_uprobe_multi;
	case CW_KF_UPROBE_SESSION:
		return filtered && !t->o.no_uprobe_multi && !t->o.no_uprobe_session &&
		       cw_kfeature_has(CW_KF_UPROBE_MULTI);
	case CW_KF_VMA_ITER:
		return !t->o.nlibs;
	case CW_KF_SWITCH_STATE: /* same result either way */
	case CW_KF_SESSION_CTX:  /* which build loads, not a fallback */
	case CW_KF_TASK_BTF:     /* without these, trace did not start */
	case CW_KF_ATTACH_COOKIE:
		return 0;
	default:
		return 1;
	}
}

void trace_say_fallbacks(struct trace *t)
{
	const struct cw_kfeatures *kf = cw_kfeatures();

	if (t->o.json)
		return;
	for (int i = 0; i < CW_KF_N; i++)
		if (kf->has[i] == CW_NO && relevant(t, (enum cw_kfeature)i))
			cw_trace_say(&t->o.say, "causeway: this kernel has no %s (Linux %s): %s\n",
				     cw_kfeature_defs[i].what, cw_kfeature_defs[i].since, cw_kfeature_defs[i].without);
}
