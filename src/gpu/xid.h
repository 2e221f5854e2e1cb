/* Xid faults: the NVIDIA driver's numbered error reports, as the kernel
 * log prints them ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python,
 * GPU has fallen off the bus.") and as NVML's critical event delivers
 * them, with the catalogue of what each code means and what to do.
 * The parser takes hostile input (anything in the kernel log): it is
 * bounded, never allocates, and rejects rather than guesses. */
#ifndef CW_GPU_XID_H
#define CW_GPU_XID_H

#include <stddef.h>
#include <stdint.h>

#define CW_XID_LINE_MAX 2048 /* a longer record is rejected unread */
#define CW_XID_CODE_MAX 1023 /* the driver's codes are below 200 today */

struct cw_xid {
	uint32_t code;
	char pci[32];     /* "0000:3b:00" as the driver prints it, "" unknown */
	int32_t pid;      /* -1 unknown ("pid='<unknown>'" or absent) */
	char comm[32];    /* "" unknown */
	char text[256];   /* the driver's description after the fields */
	uint64_t ts_usec; /* kmsg timestamp (usec since boot), 0 none */
	uint64_t seq;     /* kmsg sequence number, 0 none */
};

/* Parses one /dev/kmsg record ("PRI,SEQ,TS,FLAGS;MESSAGE") or a bare
 * message line. Returns 1 and fills out for an Xid line, 0 for any other
 * line, -EINVAL for a line that claims to be an Xid but is malformed
 * (no code, code out of range, overlong fields), -E2BIG over
 * CW_XID_LINE_MAX. */
int cw_xid_parse(const char *buf, size_t len, struct cw_xid *out);

struct cw_xid_info {
	uint32_t code;
	const char *name;     /* short, "GPU has fallen off the bus" */
	const char *severity; /* "critical" (drain the node), "error", "warning", "info" */
	const char *cause;    /* "hardware", "application", "driver", "nvlink", "memory", "thermal/power" */
	const char *action;   /* the recommended operator action */
};

/* The catalogue entry of code, or a generic entry (name "Xid N") for an
 * uncatalogued code; never NULL. */
const struct cw_xid_info *cw_xid_lookup(uint32_t code);
/* Whether code is in the catalogue. */
int cw_xid_known(uint32_t code);
/* Severity rank: critical 3, error 2, warning 1, info 0. */
int cw_xid_severity_rank(uint32_t code);

/* Deduplication of the same fault reported twice (kernel log and NVML,
 * or a repeated log line): one key (device PCI address, code) per
 * window. */
#define CW_XID_DEDUP_SLOTS 64
#define CW_XID_DEDUP_NS (10ULL * 1000000000ULL)
struct cw_xid_dedup {
	struct {
		char pci[32];
		uint32_t code;
		uint64_t t;
	} seen[CW_XID_DEDUP_SLOTS];
	unsigned next;
	uint64_t duplicates;
};
/* Returns 1 when (pci, code) was seen within CW_XID_DEDUP_NS before now
 * (a duplicate), else records it and returns 0. An empty pci matches any
 * device (an NVML event whose device could not be mapped). */
int cw_xid_dedup_check(struct cw_xid_dedup *d, const char *pci, uint32_t code, uint64_t now_ns);

/* "0000:3b:00" from NVML's "00000000:3B:00.0" (lower case, 4-digit
 * domain, no function), so both sources name a device the same way. */
void cw_xid_pci_norm(const char *in, char *out, size_t cap);

#endif
