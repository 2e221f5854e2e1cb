/* Xid parsing and the catalogue. Meanings and actions follow NVIDIA's
 * "Xid Errors" catalogue (docs.nvidia.com/deploy/xid-errors) for the
 * codes operators act on; see docs/gpu.md. */
#include "gpu/xid.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct cw_xid_info catalogue[] = {
	{8, "GPU stopped processing (timeout)", "error", "driver",
	 "restart the job; if it repeats, collect nvidia-bug-report.sh and reset the GPU (nvidia-smi -r)"},
	{13, "graphics engine exception", "warning", "application",
	 "run the job under compute-sanitizer to find the out-of-range access; if other jobs hit it too, run dcgmi diag -r 3"},
	{31, "GPU memory page fault", "warning", "application",
	 "an illegal address in the application's kernels: run under compute-sanitizer --tool memcheck; if it follows the GPU across jobs, run dcgmi diag -r 3"},
	{32, "invalid or corrupted push buffer stream", "error", "driver",
	 "check the PCIe link (nvidia-smi -q -d PCIE, replay counter) and update the driver"},
	{38, "driver firmware error", "error", "driver",
	 "update the driver and GPU firmware; reset the GPU (nvidia-smi -r)"},
	{43, "GPU stopped processing (application fault)", "warning", "application",
	 "the faulting context was killed and the GPU is healthy: restart the job and fix the application error"},
	{45, "preemptive cleanup after previous errors", "info", "driver",
	 "a context was torn down (process killed or a prior Xid): look at the Xid before it; nothing to do on its own"},
	{48, "double-bit ECC error (uncorrectable memory)", "critical", "memory",
	 "drain the node, reset the GPU (nvidia-smi -r) to retire the page; replace the board if it recurs"},
	{61, "internal micro-controller breakpoint/warning", "error", "hardware",
	 "reset the GPU (nvidia-smi -r); report to NVIDIA with nvidia-bug-report.sh if it repeats"},
	{62, "internal micro-controller halt", "critical", "hardware",
	 "drain the node and reset the GPU; replace it if the halt repeats"},
	{63, "ECC page retirement or row remap recorded", "warning", "memory",
	 "reset the GPU when idle so the pending retirement/remap takes effect (nvidia-smi -q -d ROW_REMAPPER)"},
	{64, "ECC page retirement or row remap failed", "critical", "memory",
	 "drain the node: the memory cannot be repaired in the field; replace the board"},
	{68, "video decoder (NVDEC) exception", "warning", "application",
	 "restart the decoding job; update the driver if it repeats"},
	{74, "NVLink error", "critical", "nvlink",
	 "nvidia-smi nvlink -e -i <gpu>; reset the GPUs on the link; reseat/replace the NVLink bridge or baseboard if it repeats"},
	{79, "GPU has fallen off the bus", "critical", "hardware",
	 "drain the node and reboot it; check PCIe seating, power and cooling; replace the board if it repeats"},
	{92, "high single-bit ECC error rate", "warning", "memory",
	 "watch ECC counters (nvidia-smi -q -d ECC); schedule a reset so rows are remapped"},
	{93, "non-fatal InfoROM wear limit violation", "info", "hardware",
	 "plan to replace the board; no immediate action"},
	{94, "contained ECC error", "error", "memory",
	 "only the affected processes were killed: restart them; reset the GPU when idle to remap the row"},
	{95, "uncontained ECC error", "critical", "memory",
	 "every process on the GPU is affected: drain the node and reset the GPU now (nvidia-smi -r)"},
	{109, "context switch timeout", "error", "driver",
	 "restart the job; if it repeats on healthy code, collect nvidia-bug-report.sh"},
	{119, "GSP RPC timeout", "critical", "driver",
	 "the GPU System Processor stopped answering: drain and reset the GPU or reboot; update the driver (or disable GSP firmware)"},
	{120, "GSP error", "critical", "driver",
	 "reset the GPU or reboot the node; collect nvidia-bug-report.sh and update the driver"},
	{140, "unrecovered ECC error", "critical", "memory",
	 "drain the node and reset the GPU; replace the board if it recurs"},
};

const struct cw_xid_info *cw_xid_lookup(uint32_t code)
{
	static __thread struct cw_xid_info generic;
	static __thread char name[32];

	for (size_t i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (catalogue[i].code == code)
			return &catalogue[i];
	snprintf(name, sizeof(name), "Xid %u", code);
	generic = (struct cw_xid_info){code, name, "error", "unknown",
				       "look the code up in NVIDIA's Xid catalogue; collect nvidia-bug-report.sh"};
	return &generic;
}

int cw_xid_known(uint32_t code)
{
	for (size_t i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (catalogue[i].code == code)
			return 1;
	return 0;
}

int cw_xid_severity_rank(uint32_t code)
{
	const char *s = cw_xid_lookup(code)->severity;

	return !strcmp(s, "critical") ? 3 : !strcmp(s, "error") ? 2 : !strcmp(s, "warning") ? 1 : 0;
}

/* Reads a decimal number of at most maxdigits digits at *p. */
static int read_num(const char **p, const char *end, int maxdigits, uint64_t *v)
{
	int n = 0;

	*v = 0;
	while (*p < end && isdigit((unsigned char)**p)) {
		if (++n > maxdigits)
			return -EINVAL;
		*v = *v * 10 + (uint64_t)(**p - '0');
		(*p)++;
	}
	return n ? 0 : -EINVAL;
}

static void copy_clean(char *dst, size_t cap, const char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 1 < cap; i++)
		dst[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	dst[o] = '\0';
}

static const char *find(const char *s, const char *end, const char *needle)
{
	size_t n = strlen(needle);

	for (; s + n <= end; s++)
		if (!memcmp(s, needle, n))
			return s;
	return NULL;
}

/* "pid=1234, " / "pid='<unknown>', " / "name=python, ". Returns the value
 * span or NULL; *next past the comma. */
static const char *field(const char *p, const char *end, const char *key, size_t *vlen, const char **next)
{
	size_t k = strlen(key);
	const char *v, *c;

	while (p < end && *p == ' ')
		p++;
	if ((size_t)(end - p) < k || memcmp(p, key, k))
		return NULL;
	v = p + k;
	c = memchr(v, ',', (size_t)(end - v));
	if (!c)
		return NULL;
	*vlen = (size_t)(c - v);
	*next = c + 1;
	return v;
}

int cw_xid_parse(const char *buf, size_t len, struct cw_xid *out)
{
	const char *p = buf, *end, *msg, *x, *q;
	uint64_t v;
	size_t vlen;

	if (len > CW_XID_LINE_MAX)
		return -E2BIG;
	memset(out, 0, sizeof(*out));
	out->pid = -1;
	end = buf + len;
	/* Only the first line: kmsg continuation lines (" SUBSYSTEM=...")
	 * carry no Xid fields. */
	if ((q = memchr(buf, '\n', len)))
		end = q;
	/* kmsg header "PRI,SEQ,TS_USEC,FLAGS[,...];" */
	msg = memchr(buf, ';', (size_t)(end - buf));
	if (msg && isdigit((unsigned char)buf[0])) {
		uint64_t pri, seq, ts;
		if (read_num(&p, msg, 10, &pri) || p >= msg || *p++ != ',' || read_num(&p, msg, 20, &seq) ||
		    p >= msg || *p++ != ',' || read_num(&p, msg, 20, &ts))
			msg = NULL; /* not a kmsg header: a message that holds ';' */
		else {
			out->seq = seq;
			out->ts_usec = ts;
			p = msg + 1;
		}
	}
	if (!msg || p == buf)
		p = buf;
	x = find(p, end, "NVRM: Xid (");
	if (!x)
		return 0;
	p = x + strlen("NVRM: Xid (");
	if (end - p >= 4 && !memcmp(p, "PCI:", 4))
		p += 4;
	q = memchr(p, ')', (size_t)(end - p));
	if (!q || q == p || (size_t)(q - p) >= sizeof(out->pci))
		return -EINVAL;
	for (const char *c = p; c < q; c++)
		if (!isxdigit((unsigned char)*c) && *c != ':' && *c != '.')
			return -EINVAL;
	{
		/* The span is bounded and checked above; normalise a copy. */
		char raw[32];
		copy_clean(raw, sizeof(raw), p, (size_t)(q - p));
		cw_xid_pci_norm(raw, out->pci, sizeof(out->pci));
	}
	p = q + 1;
	if (end - p < 2 || p[0] != ':' || p[1] != ' ')
		return -EINVAL;
	p += 2;
	if (read_num(&p, end, 4, &v) || v == 0 || v > CW_XID_CODE_MAX)
		return -EINVAL;
	out->code = (uint32_t)v;
	if (p < end && *p == ',')
		p++;
	/* Optional "pid=N, name=COMM," (R470+); "pid='<unknown>'" when the
	 * fault has no owning process. */
	{
		const char *val, *next;
		if ((val = field(p, end, "pid=", &vlen, &next))) {
			const char *d = val;
			if (vlen && isdigit((unsigned char)*val)) {
				if (read_num(&d, val + vlen, 10, &v) || d != val + vlen || v > 0x3fffffff)
					return -EINVAL;
				out->pid = (int32_t)v;
			}
			p = next;
			if ((val = field(p, end, "name=", &vlen, &next))) {
				if (vlen >= sizeof(out->comm) + 16)
					return -EINVAL;
				if (vlen && strncmp(val, "<unknown>", vlen))
					copy_clean(out->comm, sizeof(out->comm), val, vlen);
				p = next;
			}
		}
	}
	while (p < end && *p == ' ')
		p++;
	copy_clean(out->text, sizeof(out->text), p, (size_t)(end - p));
	/* Trailing whitespace or CR. */
	for (vlen = strlen(out->text); vlen && (out->text[vlen - 1] == ' ' || out->text[vlen - 1] == '?'); vlen--)
		out->text[vlen - 1] = '\0';
	return 1;
}

void cw_xid_pci_norm(const char *in, char *out, size_t cap)
{
	unsigned long dom = 0, bus = 0, dev = 0;
	unsigned fn;
	int n;

	if (!cap)
		return;
	out[0] = '\0';
	if (!in || !*in)
		return;
	n = sscanf(in, "%lx:%lx:%lx.%x", &dom, &bus, &dev, &fn);
	if (n >= 3 && dom <= 0xffffffffUL && bus <= 0xff && dev <= 0x1f) {
		snprintf(out, cap, "%04lx:%02lx:%02lx", dom & 0xffff, bus, dev);
		return;
	}
	/* "3b:00" without a domain. */
	if (sscanf(in, "%lx:%lx", &bus, &dev) == 2 && bus <= 0xff && dev <= 0x1f) {
		snprintf(out, cap, "0000:%02lx:%02lx", bus, dev);
		return;
	}
	copy_clean(out, cap, in, strnlen(in, cap - 1));
}

int cw_xid_dedup_check(struct cw_xid_dedup *d, const char *pci, uint32_t code, uint64_t now_ns)
{
	for (unsigned i = 0; i < CW_XID_DEDUP_SLOTS; i++) {
		if (!d->seen[i].t || d->seen[i].code != code)
			continue;
		if (now_ns - d->seen[i].t > CW_XID_DEDUP_NS && now_ns > d->seen[i].t)
			continue;
		if (!pci[0] || !d->seen[i].pci[0] || !strcmp(pci, d->seen[i].pci)) {
			d->duplicates++;
			return 1;
		}
	}
	d->seen[d->next].code = code;
	d->seen[d->next].t = now_ns ? now_ns : 1;
	snprintf(d->seen[d->next].pci, sizeof(d->seen[d->next].pci), "%s", pci);
	d->next = (d->next + 1) % CW_XID_DEDUP_SLOTS;
	return 0;
}
