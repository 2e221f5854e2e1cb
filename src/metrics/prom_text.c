/* Prometheus text exposition (format 0.0.4): label escaping, metric
 * names, tenant labels and the fixed latency buckets every family and the
 * OTLP exporter share. A leaf: it knows strbuf and nothing else. */
#include "metrics/prom_text.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int cw_prom_escape_label(struct strbuf *sb, const char *v)
{
	int rc = 0;

	for (; v && *v && !rc; v++) {
		if (*v == '\\')
			rc = strbuf_adds(sb, "\\\\");
		else if (*v == '"')
			rc = strbuf_adds(sb, "\\\"");
		else if (*v == '\n')
			rc = strbuf_adds(sb, "\\n");
		else
			rc = strbuf_addch(sb, *v);
	}
	return rc;
}

int cw_prom_sanitize_name(struct strbuf *sb, const char *s)
{
	int rc = 0;

	if (s && isdigit((unsigned char)*s))
		rc = strbuf_addch(sb, '_');
	for (; s && *s && !rc; s++)
		rc = strbuf_addch(sb, isalnum((unsigned char)*s) || *s == '_' ? *s : '_');
	return rc;
}

void cw_prom_tenant_labels(struct strbuf *sb, const char *container, const char *pod, const char *ns)
{
	static const char *const name[3] = { "container", "pod", "namespace" };
	const char *v[3] = { container, pod, ns };
	char id[32];

	if (container && strncmp(container, "slurm-job-", 10)) {
		snprintf(id, sizeof(id), "%.12s", container);
		v[0] = id;
	}
	for (int k = 0; k < 3; k++) {
		if (!v[k] || !*v[k])
			continue;
		strbuf_addf(sb, ",%s=\"", name[k]);
		cw_prom_escape_label(sb, v[k]);
		strbuf_addch(sb, '"');
	}
}

unsigned cw_prom_bucket(uint64_t ns)
{
	unsigned i;

	for (i = 0; i < CW_PROM_BUCKETS; i++)
		if (ns < (1024ULL << i))
			return i;
	return CW_PROM_BUCKETS;
}

double cw_prom_bucket_le(unsigned i)
{
	return (double)(1024ULL << i) / 1e9;
}
