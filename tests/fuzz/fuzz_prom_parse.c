/* Fuzzes the Prometheus text parser (src/inference/prom_parse.c) with
 * what an engine's /metrics could answer. Input: one byte n, then n
 * bytes (at most 32) that name one more series asked for, then the
 * exposition (an exact-size heap copy, so a read past its end is
 * caught). Invariants: the count returned is the samples' total, no
 * more than the lines; a want with no sample sums to 0; a sum is NaN
 * only from two samples or more (+Inf and -Inf). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inference/prom_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[33];
	struct cw_prom_want w[5] = {
		{ .name = "llamacpp:requests_processing" },
		{ .name = "vllm:num_requests_waiting" },
		{ .name = "q" },
		{ .name = "" },
		{ .name = name },
	};
	size_t n, lines = 1, total = 0;
	char *text;
	int rc;

	if (size < 1)
		return 0;
	n = data[0] % 33;
	if (n > size - 1)
		n = size - 1;
	memcpy(name, data + 1, n);
	name[n] = '\0';
	data += 1 + n;
	size -= 1 + n;
	text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	rc = cw_prom_sum(text, size, w, 5);
	for (size_t i = 0; i < size; i++)
		lines += text[i] == '\n';
	if (rc < 0 || (size_t)rc > lines)
		abort();
	for (size_t i = 0; i < 5; i++) {
		total += w[i].samples;
		if (!w[i].samples && w[i].sum != 0)
			abort();
		/* NaN samples are skipped: one sample cannot make a NaN. */
		if (isnan(w[i].sum) && w[i].samples < 2)
			abort();
	}
	/* The empty name is no metric name: it never matches. */
	if (total != (size_t)rc || w[3].samples)
		abort();
	free(text);
	return 0;
}
