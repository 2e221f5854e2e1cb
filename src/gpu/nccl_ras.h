/* NCCL's RAS service (NCCL >= 2.24, on by default): each NCCL process
 * listens on localhost:28028 (NCCL_RAS_ADDR) for the ncclras client, and
 * any one of them answers for the whole job: every communicator, the
 * collective operation counts of each rank it reached, and the ranks it
 * could not reach. The protocol is lines of text (NCCL src/ras/client.cc,
 * client_support.cc):
 *   -> "CLIENT PROTOCOL 2\n"   <- "SERVER PROTOCOL <n>\n"
 *   -> "TIMEOUT <secs>\n"      <- "OK\n"   (how long NCCL waits for peers)
 *   -> "SET FORMAT json\n"     <- "OK\n"   (NCCL >= 2.28.7; older: "ERROR: ...")
 *   -> "STATUS\n"              <- the report, then the connection closes
 * The JSON report: {"nccl_version", "communicators": [{"hash", "size",
 * "ranks_count", "missing_ranks_count", "ranks": [{"rank", "host", "pid",
 * "status": {"init_state", "async_error", "abort_flag", ...},
 * "collective_counts": {"AllReduce": n, ...}}], "missing_ranks": [{"rank",
 * "host", "pid", "status": {"unresponsive", "considered_dead"}}]}],
 * "ras": {"collection_time_sec", "timeouts_count"}}.
 *
 * The reply is hostile input (any process can listen on the port): read
 * with a connect and a whole-exchange deadline, as it arrives, at most
 * CW_RAS_REPLY_MAX bytes (past it the answer is kept as read so far and
 * marked truncated), parsed piece by piece (ras_stream.h: memory stays
 * bounded whatever the reply holds), every field bounded and optional,
 * every count capped. Who answered is checked by the caller's verify
 * callback while the connection is open (trace: the listening socket
 * must be a traced rank's); an answer it does not vouch for is shown as
 * unverified, never as NCCL's. */
#ifndef CW_GPU_NCCL_RAS_H
#define CW_GPU_NCCL_RAS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CW_RAS_DEFAULT_PORT 28028
#define CW_RAS_PROTOCOL 2
#define CW_RAS_REPLY_MAX (1u << 20) /* bytes of report read at most (docs/nccl.md) */
#define CW_RAS_MAX_COMMS 8          /* communicators kept (the largest first) */
#define CW_RAS_MAX_LISTED 16        /* ranks listed per communicator and kind */

enum cw_ras_state {
	CW_RAS_ANSWERED = 0, /* a JSON report, parsed */
	CW_RAS_TEXT_ONLY,    /* the service answered but has no JSON (NCCL < 2.28.7) */
	CW_RAS_NO_ANSWER,    /* nothing listens, or no answer in time */
	CW_RAS_BAD_REPLY,    /* something answered, not the RAS protocol */
};

enum cw_ras_source {
	CW_RAS_SOURCE_UNCHECKED = 0, /* no verify callback (a direct query) */
	CW_RAS_SOURCE_VERIFIED,      /* the listener is a process of the traced job */
	CW_RAS_SOURCE_UNVERIFIED,    /* it is not, or could not be told */
};

struct cw_ras_rank {
	int rank;
	int64_t pid;
	char host[64];
	uint64_t collectives; /* all collective operation counts, summed */
	int async_error, abort, unresponsive, dead;
};

struct cw_ras_comm {
	char hash[24];
	int size, ranks_count, missing_count;
	uint64_t max_collectives, min_collectives; /* over the ranks that answered */
	int nbehind;                               /* ranks with fewer collectives than the most */
	struct cw_ras_rank behind[CW_RAS_MAX_LISTED];
	int nmissing_listed;
	struct cw_ras_rank missing[CW_RAS_MAX_LISTED];
	int async_errors; /* ranks reporting an asynchronous error */
};

struct cw_ras_status {
	enum cw_ras_state state;
	char why[96];          /* no_answer / bad_reply: what happened */
	char nccl_version[32];
	int ncomms;            /* communicators in the report */
	int timeouts;          /* RAS's own timeouts while gathering */
	struct cw_ras_comm comms[CW_RAS_MAX_COMMS];
	int truncated;         /* the reply went past CW_RAS_REPLY_MAX, or a value past
				* CW_RAS_PIECE_MAX was skipped: what was read is kept */
	enum cw_ras_source source;
	char source_why[160];  /* how the listener was (not) matched to the job */
	char text[4096];       /* text_only: the report (truncated set when longer) */
};

struct cw_ras_opts {
	const char *host;       /* NULL: 127.0.0.1 */
	int port;               /* 0: CW_RAS_DEFAULT_PORT */
	unsigned timeout_ms;    /* whole exchange; 0: 12000 (NCCL's gathering takes up to 10 s) */
	unsigned connect_ms;    /* 0: 1000 */
	/* Called once the service answered the handshake, with the connected
	 * socket: returns 1 when the listener is vouched for, 0 when not,
	 * writing why; NULL leaves the source unchecked. */
	int (*verify)(void *arg, int fd, char *why, size_t wlen);
	void *verify_arg;
	/* Above 0: once this fd is readable (an eventfd written at stop) the
	 * exchange ends at once, "no_answer" ("stopped before an answer"). */
	int cancel_fd;
};

/* Asks the RAS service once. Returns 0 with out filled (out->state says
 * whether it answered), or -errno for a local failure (bad options, no
 * memory). Never prints. */
int cw_ras_query(const struct cw_ras_opts *o, struct cw_ras_status *out);
/* Parses a JSON STATUS report of len bytes into out (state ANSWERED), or
 * returns -EBADMSG (state BAD_REPLY, why set). */
int cw_ras_parse_json(const char *buf, size_t len, struct cw_ras_status *out);
/* {"status": "answered"|"text_only"|"unverified"|"no_answer"|"bad_reply",
 * "truncated", "source", ...}: what explain shows and trace stores
 * (docs/nccl.md "NCCL RAS"). An answer whose source is UNVERIFIED has
 * status "unverified" with its content beside it. */
json_t *cw_ras_status_json(const struct cw_ras_status *s);
const char *cw_ras_state_name(enum cw_ras_state s);

#endif
