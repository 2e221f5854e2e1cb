/* The kubelet's read-only pod list (GET <tenants.kubelet_url>, e.g.
 * http://127.0.0.1:10255/pods): pod UID -> name and namespace, which the
 * cgroup paths do not carry. Off unless the config names the URL
 * (docs/tenants.md). When the list names a pod, it wins over the
 * container's own environment (which the workload can set to anything).
 *
 * The body is hostile input: read through libcurl with a size cap, parsed
 * with jansson, every kept field validated (a UID of 32-36 hex characters
 * and dashes, a DNS-1123 pod name and namespace), at most
 * CW_KUBELET_MAX_PODS pods kept. cw_kubelet_parse is pure so that it is
 * unit-tested and fuzzed (tests/fuzz/fuzz_kubelet.c). */
#ifndef CW_TENANT_KUBELET_H
#define CW_TENANT_KUBELET_H

#include <stddef.h>
#include <stdint.h>

#define CW_KUBELET_MAX_BODY (32u << 20) /* a node's pods with full specs */
#define CW_KUBELET_MAX_PODS 4096        /* kubelet's own limit is 110 by default */
#define CW_KUBELET_TIMEOUT_MS 2000
/* A miss (a pod newer than the list) refetches at most this often; the
 * list is refreshed anyway after CW_KUBELET_MAX_AGE_NS. */
#define CW_KUBELET_MISS_EVERY_NS (2ULL * 1000000000ULL)
#define CW_KUBELET_MAX_AGE_NS (60ULL * 1000000000ULL)

struct cw_kubelet_pod {
	char uid[40];
	char name[254];
	char ns[64];
};

struct cw_kubelet {
	char *url;
	struct cw_kubelet_pod *pods; /* sorted by uid */
	int npods;
	int skipped;             /* items of the last list that failed validation */
	uint64_t fetched_ns;     /* monotonic time of the last successful fetch; 0 never */
	uint64_t tried_ns;       /* ... of the last attempt */
	uint64_t fetches, errors;
	char last_error[160];
};

/* Parses a PodList body. Returns the pods kept (malloc'd, sorted by uid,
 * in *out, *n) with *skipped the items refused, or -EINVAL (not JSON, or
 * no "items" array) / -ENOMEM. Never reads past len. */
int cw_kubelet_parse(const char *body, size_t len, struct cw_kubelet_pod **out, int *n, int *skipped);

/* GET url into a malloc'd, NUL-terminated body of at most
 * CW_KUBELET_MAX_BODY bytes (http or https only, no redirects, a timeout
 * of timeout_ms). Returns 0, or -EIO/-EFBIG/-ETIMEDOUT/-EPROTO (a status
 * other than 200) with err set. */
int cw_kubelet_get(const char *url, long timeout_ms, char **body, size_t *len, char *err, size_t errlen);

int cw_kubelet_init(struct cw_kubelet *k, const char *url);
void cw_kubelet_free(struct cw_kubelet *k);
/* The pod of uid, refreshing first when the list is older than
 * CW_KUBELET_MAX_AGE_NS or (miss) uid is unknown and the last attempt is
 * older than CW_KUBELET_MISS_EVERY_NS. NULL when unknown. Blocks for the
 * fetch: call it off the event path (the cgroup resolver thread). */
const struct cw_kubelet_pod *cw_kubelet_lookup(struct cw_kubelet *k, const char *uid, uint64_t now_ns);

#endif
