/* Reading a few series out of a Prometheus text exposition (format
 * 0.0.4, and the OpenMetrics text that most servers also accept): what
 * an inference engine's own /metrics says (trace/engine_scrape.c). The
 * text comes from another process and is hostile input: any bytes, any
 * length, no NUL needed; the work is one pass over it. No maintained C
 * library parses this format, so this is the small part we need. */
#ifndef CW_INFERENCE_PROM_PARSE_H
#define CW_INFERENCE_PROM_PARSE_H

#include <stddef.h>

/* A value token longer than this is no number (a line with one is
 * skipped). */
#define CW_PROM_VALUE_MAX 64

/* One series asked for, by its metric name exactly (no suffix rules:
 * a counter's "_total" is part of the name asked for). */
struct cw_prom_want {
	const char *name;
	double sum;	/* of the samples' values, whatever their labels */
	size_t samples; /* how many samples were summed (NaN ones are not) */
};

/* Zeroes every want's sum and samples, then adds to them the value of
 * each sample line of buf[0..len) whose metric name is want[i].name
 * (the first want of that name when several are). Comments (HELP, TYPE,
 * any '#' line), blank lines and lines that are not a well-formed sample
 * are skipped; a line may end in LF or CRLF or be the last without one,
 * and may carry a timestamp or an exemplar after its value. Returns the
 * number of samples summed, or -EINVAL for a NULL buf with len or a NULL
 * want with nwant. A sum can be infinite, or NaN when +Inf and -Inf met. */
int cw_prom_sum(const char *buf, size_t len, struct cw_prom_want *want, size_t nwant);

#endif
