/* Fuzzes what the GPU telemetry takes from outside: kernel-log records
 * (any process can write to /dev/kmsg, and the driver's text varies) and
 * NVML readings (a broken board or a shim library returns anything).
 * Input: one selector byte; 0x00-0x7f: the rest is a kmsg record for the
 * Xid parser (an exact-size heap copy, so a read past the end is caught);
 * 0x80-0xff: the rest fills a sample's readings, which sanitizing must
 * bring within range. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/xid.h"

static void check_sample(const uint8_t *data, size_t size)
{
	struct cw_gpu_sample s;
	size_t n = CW_GPU_NREADINGS;
	char buf[64];

	cw_gpu_sample_clear(&s);
	for (size_t i = 0; i < n && (i + 1) * sizeof(int64_t) <= size; i++)
		memcpy(cw_gpu_reading(&s, (int)i), data + i * sizeof(int64_t), sizeof(int64_t));
	cw_gpu_sample_sanitize(&s);
	if ((s.gpu_util != -1 && (s.gpu_util < 0 || s.gpu_util > 100)) ||
	    (s.mem_total > 0 && s.mem_used > s.mem_total) || (s.temp_gpu != -1 && s.temp_gpu > 200) ||
	    (s.reasons != -1 && (s.reasons < 0 || s.reasons > (int64_t)CW_GPU_REASON_KNOWN)))
		abort();
	/* Only temperatures may be below zero (down to -40 C). */
	for (size_t i = 0; i < n; i++) {
		int64_t *f = cw_gpu_reading(&s, (int)i);
		if (*f < (f == &s.temp_gpu || f == &s.temp_mem ? -40 : -1))
			abort();
	}
	cw_gpu_reasons_text(s.reasons, buf, sizeof(buf));
	if (strlen(buf) >= sizeof(buf))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_xid x;
	char *rec;
	int rc;

	if (size < 1)
		return 0;
	if (data[0] & 0x80) {
		check_sample(data + 1, size - 1);
		return 0;
	}
	rec = malloc(size - 1 ? size - 1 : 1);
	if (!rec)
		return 0;
	memcpy(rec, data + 1, size - 1);
	rc = cw_xid_parse(rec, size - 1, &x);
	if (rc == 1) {
		/* Whatever it accepted is bounded and printable. */
		if (!x.code || x.code > CW_XID_CODE_MAX || strlen(x.pci) >= sizeof(x.pci) ||
		    strlen(x.comm) >= sizeof(x.comm) || strlen(x.text) >= sizeof(x.text) || x.pid < -1)
			abort();
		for (const char *p = x.text; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				abort();
		(void)cw_xid_lookup(x.code);
	} else if (rc != 0 && rc != -22 && rc != -7) {
		abort(); /* only 0, -EINVAL, -E2BIG */
	}
	free(rec);
	return 0;
}
