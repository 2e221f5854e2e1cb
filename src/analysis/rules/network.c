/* network: the slow calls (an NCCL collective, the synchronize that waits
 * for it, a copy) overlap TCP retransmits on sockets of the same process:
 * the step waits on a lossy link. A retransmit is attributed to the
 * process that last sent or received on the socket (net.bpf.c), which
 * for NCCL is its proxy thread, so calls and retransmits are matched by
 * pid, not tid. A call counts when at least one such retransmit falls
 * inside [start, end]; its time less what it spent preempted is
 * explained. The rule needs >= 3 retransmits inside the slow calls (one
 * stray retransmit is normal on any busy link).
 * explained_share = that time / slow-call time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"
#include "util/search.h"

#define CW_NET_MIN_RETX 3
/* Linux never retransmits on a timeout sooner than 200 ms (TCP_RTO_MIN):
 * two retransmits of one socket that far apart inside one slow call are
 * a timeout's (the second waited for the RTO), not fast retransmits. */
#define CW_NET_RTO_MIN_NS (200 * NSEC_PER_MSEC)

struct peer {
	char tuple[160];
	uint64_t n;
	uint64_t last_mono;
	size_t last_call;
	uint64_t rtos;
};

static int retx_before(const void *rows, size_t i, const void *key)
{
	return ((const struct cw_retx *)rows)[i].mono_ns < *(const uint64_t *)key;
}

/* First retransmit at or after mono. */
static size_t retx_at(const struct cw_sysctx *sys, uint64_t mono)
{
	return cw_partition_point(sys->retx, sys->nretx, &mono, retx_before);
}

/* "10.0.0.1:5000 -> 10.0.0.2:43120" -> "10.0.0.2:43120". */
static const char *peer_of(const char *tuple)
{
	const char *p = strstr(tuple, " -> ");
	return p ? p + 4 : tuple;
}

int cw_rule_network(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	struct peer peers[16];
	size_t np = 0, top = 0;
	uint64_t explained = 0, retx = 0, calls_hit = 0, first_wall = 0, rtos = 0;
	unsigned char *seen;
	char head[128], exp[32];
	double share;
	int ret;

	if (!ctx->slow_time_ns)
		return 0;
	if ((ret = cw_sysctx_need_retx(ctx->sys)) < 0)
		return ret;
	if (!ctx->sys->nretx)
		return 0;
	/* Calls of several threads can overlap one retransmit: count it once. */
	seen = calloc(ctx->sys->nretx, 1);
	if (!seen)
		return -ENOMEM;
	memset(peers, 0, sizeof(peers));
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *s = &ctx->calls[i];
		uint64_t e = s->mono_ns + s->dur_ns, hit = 0;

		for (size_t k = retx_at(ctx->sys, s->mono_ns); k < ctx->sys->nretx && ctx->sys->retx[k].mono_ns <= e;
		     k++) {
			const struct cw_retx *r = &ctx->sys->retx[k];
			const char *tuple = r->tuple >= 0 ? ctx->sys->retx_tuples[r->tuple] : "other sockets";
			size_t p;
			if (r->pid <= 0 || r->pid != s->pid)
				continue;
			hit++;
			if (seen[k])
				continue;
			seen[k] = 1;
			retx++;
			if (!first_wall)
				first_wall = r->wall_ns;
			for (p = 0; p < np && strcmp(peers[p].tuple, tuple); p++)
				;
			if (p == np && np < 16) {
				snprintf(peers[np].tuple, sizeof(peers[np].tuple), "%s", tuple);
				np++;
			}
			if (p < np) {
				/* Within one call: a later retransmit of one loss. */
				if (peers[p].n && peers[p].last_call == i &&
				    r->mono_ns - peers[p].last_mono >= CW_NET_RTO_MIN_NS)
					peers[p].rtos++;
				peers[p].n++;
				peers[p].last_mono = r->mono_ns;
				peers[p].last_call = i;
			}
		}
		if (!hit)
			continue;
		calls_hit++;
		explained += s->dur_ns > s->preempted_ns ? s->dur_ns - s->preempted_ns : 0;
	}
	free(seen);
	if (retx < CW_NET_MIN_RETX || !np)
		return 0;
	for (size_t p = 1; p < np; p++)
		if (peers[p].n > peers[top].n)
			top = p;
	for (size_t p = 0; p < np; p++)
		rtos += peers[p].rtos;
	share = (double)explained / (double)ctx->slow_time_ns;
	c->kind = CW_KIND_NETWORK;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: %llu of its %zu slow calls overlapped %llu TCP retransmits on sockets of pid %lld (%s),"
		 " mostly to %.64s (%llu retransmits, %llu after a timeout); the step waited on a lossy link",
		 head, (unsigned long long)calls_hit, ctx->ncalls, (unsigned long long)retx, (long long)c->pid,
		 c->comm, peer_of(peers[top].tuple), (unsigned long long)peers[top].n,
		 (unsigned long long)peers[top].rtos);
	cw_format_duration(explained, exp, sizeof(exp));
	cw_chain_add_timeline(c, CW_LAYER_NET, first_wall, "first retransmit on %.150s inside a slow call",
			      peers[top].tuple);
	cw_chain_add_timeline(c, CW_LAYER_NET, ctx->calls[ctx->ncalls - 1].wall_ns,
			      "%llu retransmits to %zu peers overlapped %s of slow calls", (unsigned long long)retx,
			      np, exp);
	cw_chain_add_fix(c, "ip -s link; for i in /sys/class/net/*; do ethtool -S \"${i##*/}\" 2>/dev/null; done | grep -iE 'drop|err|crc'  # find the lossy hop");
	cw_chain_add_fix(c, "ss -tin dst %.64s  # retrans, rto and cwnd of the socket", peer_of(peers[top].tuple));
	cw_chain_add_advice(c, "set NCCL_SOCKET_IFNAME to the fast interface (with NCCL_IB_DISABLE=0) in the job's environment: keep NCCL off the lossy path");
	cw_chain_add_advice(c, "set NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 in the job's environment: spread NCCL over more sockets");
	cw_chain_add_advice(c, "raise the interface MTU to 9000 (ip link set dev IFACE mtu 9000) only when every hop carries jumbo frames; else match the path MTU");
	cw_chain_add_evidence(c, "retransmits", (double)retx, 1);
	cw_chain_add_evidence(c, "retransmits_top_peer", (double)peers[top].n, 1);
	cw_chain_add_evidence(c, "rto_retransmits", (double)rtos, 1);
	cw_chain_add_evidence(c, "peers", (double)np, 1);
	cw_chain_add_evidence(c, "calls_with_retransmits", (double)calls_hit, 1);
	cw_chain_add_evidence(c, "retransmits_in_window", (double)ctx->sys->nretx, 1);
	return 1;
}
