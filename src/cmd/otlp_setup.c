/* OTLP export set-up shared by trace and serve (otlp_setup.h). */
#define _GNU_SOURCE
#include "cmd/otlp_setup.h"

#include <stdio.h>

#include "cmd/cmd.h"
#include "config/config.h"
#include "util/log.h"

#define FLUSH_NS (5ULL * 1000000000ULL)

int otlp_setup_start(const char *flag_url, const char *db, struct cw_live_metrics *live,
		     const char *who, int json, struct cw_otlp **out)
{
	const struct cw_config *cfg;
	struct cw_otlp_opts o = { 0 };
	char err[1024];

	*out = NULL;
	if (cw_config_get(&cfg, err, sizeof(err))) {
		cw_report_error(json, "%s", err);
		return CW_EXIT_USAGE;
	}
	o.endpoint = flag_url ? flag_url : cfg->otlp_endpoint;
	if (!o.endpoint)
		return 0;
	o.db_path = db;
	o.node = cw_default_node();
	o.live = live;
	o.ca_file = cfg->otlp_ca_cert;
	o.interval_ns = cfg->otlp_interval_ns;
	o.max_queue = cfg->otlp_queue;
	if (cw_otlp_start(out, &o, err, sizeof(err))) {
		cw_report_error(json, "%s: %s", who, err);
		return CW_EXIT_USAGE;
	}
	if (!json)
		fprintf(stderr, "causeway: exporting OTLP to %s every %llus\n", o.endpoint,
			(unsigned long long)((o.interval_ns ? o.interval_ns : CW_OTLP_DEFAULT_INTERVAL_NS) /
					     1000000000ULL));
	return 0;
}

void otlp_setup_stop(struct cw_otlp *x, const char *who, int quiet)
{
	struct cw_otlp_stats s;

	if (!x)
		return;
	cw_otlp_stop(x, FLUSH_NS, &s);
	if (quiet)
		return;
	fprintf(stderr, "causeway: %s: OTLP: %llu payloads sent (%llu chains), %llu retries, "
			"%llu dropped (queue), %llu refused by the receiver\n",
		who, (unsigned long long)s.sent, (unsigned long long)s.chains,
		(unsigned long long)s.retries, (unsigned long long)s.dropped_queue,
		(unsigned long long)s.rejected);
}
