/* The tool table: names, descriptions written for a model, and JSON
 * schemas. A new tool is one row here and one function in tools_*.c;
 * later tools (tenants, GPU health) go through the same table. */
#include "mcp/tools_int.h"

#define WINDOW_PROPS                                                                                      \
	"\"since\": {\"type\": \"string\", \"maxLength\": 32, \"description\": \"window: the last DURATION "  \
	"before the newest data, e.g. 30s, 5m, 2h (not with from/to)\"},"                                     \
	"\"from\": {\"type\": \"string\", \"maxLength\": 64, \"description\": \"window start: RFC 3339 or "   \
	"Unix seconds\"},"                                                                                    \
	"\"to\": {\"type\": \"string\", \"maxLength\": 64, \"description\": \"window end: RFC 3339 or Unix "  \
	"seconds\"}"

/* Tenant filters (docs/tenants.md), parsed like the command-line flags. */
#define TENANT_PROPS                                                                                      \
	"\"container\": {\"type\": \"string\", \"maxLength\": 64, \"description\": \"only the processes of "  \
	"the container whose id starts with this (4-64 hex characters)\"},"                                    \
	"\"pod\": {\"type\": \"string\", \"maxLength\": 253, \"description\": \"only a Kubernetes pod's "      \
	"processes, by name or UID\"},"                                                                        \
	"\"namespace\": {\"type\": \"string\", \"maxLength\": 63, \"description\": \"only the processes of "  \
	"the pods of this Kubernetes namespace\"},"                                                            \
	"\"cgroup\": {\"type\": \"string\", \"maxLength\": 4096, \"description\": \"only this cgroup (path or "\
	"cgroup v2 id) and its descendants\"},"                                                                \
	"\"per_tenant\": {\"type\": \"boolean\", \"description\": \"group by container, pod or Slurm job\"}"

#define CHAIN_SCHEMA                                                                                      \
	"{\"type\": \"object\", \"required\": [\"severity\", \"op\", \"root_cause\"], \"properties\": {"      \
	"\"severity\": {\"type\": \"string\", \"enum\": [\"HIGH\", \"MEDIUM\", \"LOW\"]},"                    \
	"\"op\": {\"type\": \"string\"}, \"source\": {\"type\": \"string\"},"                                \
	"\"count\": {\"type\": \"integer\"}, \"p50_ns\": {\"type\": \"integer\"},"                           \
	"\"p99_ns\": {\"type\": \"integer\"}, \"tail_ratio\": {\"type\": \"number\"},"                       \
	"\"explained_share\": {\"type\": \"number\"},"                                                        \
	"\"root_cause\": {\"type\": \"object\", \"properties\": {\"kind\": {\"type\": \"string\"},"           \
	"\"summary\": {\"type\": \"string\"}}},"                                                              \
	"\"fix\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"                                  \
	"\"pid\": {\"type\": [\"integer\", \"null\"]}, \"rank\": {\"type\": [\"integer\", \"null\"]},"        \
	"\"python\": {\"type\": [\"object\", \"null\"]}, \"slowest_call_id\": {\"type\": \"integer\"}}}"

/* The fleet tool and its query_fleet alias: one input shape, the action
 * names differing. */
#define FLEET_INPUT(actions)                                                                                   \
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"action\"], \"properties\": "     \
	"{\"action\": {\"type\": \"string\", \"enum\": [" actions "]},"                                            \
	"\"sql\": {\"type\": \"string\", \"maxLength\": 65536, \"description\": \"sql: one SELECT\"},"              \
	"\"max_rows\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000, \"description\": \"sql: "        \
	"rows per node (default 50)\"},"                                                                            \
	"\"since\": {\"type\": \"string\", \"maxLength\": 32, \"description\": \"chains, ops, overview: the last " \
	"DURATION of each node's data (5m, 2h)\"},"                                                                 \
	"\"top_n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100, \"description\": \"chains: "         \
	"chains (default 10)\"}}}"
#define FLEET_OUTPUT                                                                                           \
	"{\"type\": \"object\", \"properties\": {\"action\": {\"type\": \"string\"}, \"chains\": {\"type\": "      \
	"\"array\"}, \"columns\": {\"type\": \"array\"}, \"rows\": {\"type\": \"array\"}, \"warnings\": "           \
	"{\"type\": \"array\"}, \"nodes\": {\"type\": \"array\"}, \"nodes_asked\": {\"type\": \"integer\"}, "       \
	"\"nodes_answered\": {\"type\": \"integer\"}, \"truncated\": {\"type\": \"boolean\"}}}"

static const struct cw_mcp_tool tools[] = {
	{
		"causal_chains",
		"Causal chains (why calls were slow)",
		"The diagnosis: for every op with a latency tail (p99 well above p50) causeway measured what the "
		"calling thread was doing during its slow calls (preempted, blocked on I/O, under memory "
		"pressure, waiting on a straggler rank, ...) and names the cause with the numbers and fixes. "
		"Same objects as `causeway explain --json`, most severe first. Use this first for \"why is X "
		"slow\". Each chain has slowest_call_id for explain_call and an op/pid for stacks. Quote the "
		"numbers (p99_ns, explained_share) exactly.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" WINDOW_PROPS ","
		"\"pid\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4194304, \"description\": \"only this "
		"process\"},"
		"\"node\": {\"type\": \"string\", \"maxLength\": 255, \"description\": \"only this node (merged "
		"databases)\"},"
		"\"rank\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 1000000, \"description\": \"only "
		"chains of this distributed rank\"},"
		"\"per_process\": {\"type\": \"boolean\", \"description\": \"one chain per process instead of per "
		"op\"}," TENANT_PROPS ","
		"\"top_n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100, \"description\": \"chains to "
		"return (default 10)\"}}}",
		"{\"type\": \"object\", \"required\": [\"chains\", \"chain_count\", \"total_chains\", "
		"\"truncated\"], \"properties\": {\"node\": {\"type\": \"string\"}, \"window\": {\"type\": "
		"\"object\"}, \"chains\": {\"type\": \"array\", \"items\": " CHAIN_SCHEMA "},"
		"\"chain_count\": {\"type\": \"integer\"}, \"total_chains\": {\"type\": \"integer\"},"
		"\"truncated\": {\"type\": \"boolean\"}, \"warnings\": {\"type\": \"array\"}}}",
		cw_tool_causal_chains,
		1,
	},
	{
		"trace_summary",
		"Per-op latency summary",
		"Per (source, op) over the window: call count, p50/p95/p99/max latency, total time and share of "
		"wall time, largest total first (the rows of `causeway query --json`). Use it to see where time "
		"goes before asking why; by_line splits each op by the Python source line that issued it. "
		"Latencies are nanoseconds.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
		"\"since\": {\"type\": \"string\", \"maxLength\": 32, \"description\": \"the last DURATION before "
		"the newest data, e.g. 5m\"},"
		"\"by_line\": {\"type\": \"boolean\", \"description\": \"group by op and Python file:line\"},"
		TENANT_PROPS ","
		"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000, \"description\": \"rows "
		"(default 50)\"}}}",
		"{\"type\": \"object\", \"required\": [\"ops\", \"row_count\", \"total_rows\", \"truncated\"], "
		"\"properties\": {\"node\": {\"type\": \"string\"}, \"window\": {\"type\": \"object\"}, \"ops\": "
		"{\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"source\", \"op\", "
		"\"count\", \"p50_ns\", \"p99_ns\"], \"properties\": {\"source\": {\"type\": \"string\"}, \"op\": "
		"{\"type\": \"string\"}, \"count\": {\"type\": \"integer\"}, \"p50_ns\": {\"type\": \"integer\"}, "
		"\"p95_ns\": {\"type\": \"integer\"}, \"p99_ns\": {\"type\": \"integer\"}, \"max_ns\": {\"type\": "
		"\"integer\"}, \"total_ns\": {\"type\": \"integer\"}, \"wall_share\": {\"type\": \"number\"}, "
		"\"failed\": {\"type\": \"integer\"}}}}, "
		"\"row_count\": {\"type\": \"integer\"}, \"total_rows\": {\"type\": \"integer\"}, \"truncated\": "
		"{\"type\": \"boolean\"}}}",
		cw_tool_trace_summary,
		1,
	},
	{
		"explain_call",
		"One stored call, layer by layer",
		"One traced call by its events.id (slowest_call_id from causal_chains, example_call_id from "
		"stacks, or events.id from run_sql): the call itself, the Python line that issued it, its native "
		"and Python stack, and its thread's timeline around it (its other CUDA/driver/NCCL calls and "
		"every off-CPU interval with who held the CPU), offsets relative to the call's start.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"id\"], \"properties\": {"
		"\"id\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"events.id of the call\"},"
		"\"around_ms\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 10000, \"description\": "
		"\"timeline margin before and after the call (default 20)\"},"
		"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000, \"description\": "
		"\"timeline entries (default 50)\"}}}",
		"{\"type\": \"object\", \"required\": [\"call\", \"timeline\", \"truncated\"], \"properties\": {"
		"\"call\": {\"type\": \"object\", \"required\": [\"id\", \"op\", \"duration_ns\"]}, \"python\": "
		"{\"type\": [\"object\", \"null\"]}, \"stack\": {\"type\": \"array\", \"items\": {\"type\": "
		"\"string\"}}, \"timeline\": {\"type\": \"array\"}, \"around_ms\": {\"type\": \"integer\"}, "
		"\"truncated\": {\"type\": \"boolean\"}}}",
		cw_tool_explain_call,
		1,
	},
	{
		"stacks",
		"Top recorded stacks",
		"The stacks (native frames with the Python frames spliced in, innermost first) that account for "
		"the most time, optionally for one op and/or process. Each has calls, total_ns, max_ns and an "
		"example_call_id for explain_call.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
		"\"op\": {\"type\": \"string\", \"maxLength\": 128, \"description\": \"e.g. cudaMalloc\"},"
		"\"pid\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4194304},"
		"\"top_n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 50, \"description\": \"stacks "
		"(default 10)\"}}}",
		"{\"type\": \"object\", \"required\": [\"stacks\", \"count\", \"truncated\"], \"properties\": {"
		"\"stacks\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"calls\", "
		"\"total_ns\", \"frames\", \"example_call_id\"]}}, \"count\": {\"type\": \"integer\"}, "
		"\"truncated\": {\"type\": \"boolean\"}}}",
		cw_tool_stacks,
		1,
	},
	{
		"run_sql",
		"Read-only SQL over the trace",
		"Runs ONE read-only SELECT over the trace database (SQLite) and returns rows as objects. Writes, "
		"ATTACH, DDL and PRAGMA changes are refused; there is a time limit and a row cap. Read the "
		"causeway://schema resource for tables and columns. Main tables: events (one row per call: id, "
		"node, wall_ns, mono_ns, pid, tid, comm, source, op, duration_ns, bytes, detail, ret, device, "
		"stack_id, py_stack_id, anomalous), offcpu (pid, tid, start_mono_ns, end_mono_ns, duration_ns, "
		"reason preempted|blocked, by_comm, by_pid), py_stacks (id, frames, user_file, user_line, "
		"user_function), stacks (id, frames), processes, sessions, aggregates (per-second histograms), "
		"chains, snapshots. Bind values with ?1.. and params instead of splicing them into the text.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"sql\"], \"properties\": {"
		"\"sql\": {\"type\": \"string\", \"maxLength\": 65536, \"description\": \"one SELECT statement\"},"
		"\"params\": {\"type\": \"array\", \"description\": \"values for ?1, ?2, ... (null, number, boolean "
		"or string)\"},"
		"\"max_rows\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000, \"description\": \"row "
		"cap (default 50)\"}}}",
		"{\"type\": \"object\", \"required\": [\"columns\", \"rows\", \"row_count\", \"truncated\"], "
		"\"properties\": {\"columns\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, \"rows\": "
		"{\"type\": \"array\", \"items\": {\"type\": \"object\"}}, \"row_count\": {\"type\": \"integer\"}, "
		"\"truncated\": {\"type\": \"boolean\"}, \"max_rows\": {\"type\": \"integer\"}, \"elapsed_ns\": "
		"{\"type\": \"integer\"}}}",
		cw_tool_run_sql,
		1,
	},
	{
		"fleet",
		"Ask every node of the fleet",
		"Fans one question out to every configured causeway agent at once: action \"chains\" (or "
		"\"explain\") returns the causal chains of all nodes (each labelled with its node, the NCCL "
		"straggler across them included), most severe first; \"sql\" (or \"query\") runs one read-only "
		"SELECT on every node with a leading node column; \"ops\" each node's operation breakdown; "
		"\"overview\" each node's event counts by source. \"since\" (5m, 2h) narrows chains, ops and "
		"overview. Nodes that are down or slow, and clock skew, are warnings at the top of the result; "
		"the others still answer. Use it for \"which rank/node is slow\".",
		FLEET_INPUT("\"explain\", \"query\", \"chains\", \"sql\", \"ops\", \"overview\""),
		FLEET_OUTPUT,
		cw_tool_fleet,
		1,
	},
	{
		"query_fleet",
		"Ask every node of the fleet (query_fleet)",
		"The fleet tool under the name other agents' articles use, with its four actions: chains (causal "
		"analysis across nodes), sql (one read-only SELECT on every node), ops (operation breakdown per "
		"node) and overview (event counts per node); \"since\" as \"5m\". Clock skew warnings come first.",
		FLEET_INPUT("\"chains\", \"sql\", \"ops\", \"overview\""),
		FLEET_OUTPUT,
		cw_tool_fleet,
		1,
	},
	{
		"export_timeline",
		"Perfetto timeline of the trace",
		"Writes the window as Chrome trace JSON for ui.perfetto.dev (a track per thread, CUDA/NCCL calls "
		"as slices, off-CPU and I/O intervals, chain markers with flow arrows) to \"path\" inside the "
		"server's export directory (mcp.export_dir, default ~/.causeway/exports), as `causeway export -o` "
		"does; an existing file is replaced only with \"overwrite\": true. Without path it only reports "
		"what the file would hold.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" WINDOW_PROPS ","
		"\"path\": {\"type\": \"string\", \"maxLength\": 4000, \"description\": \"file name inside the "
		"export directory (or an absolute path within it), e.g. trace.json\"},"
		"\"overwrite\": {\"type\": \"boolean\", \"description\": \"replace the file when it exists "
		"(default false)\"},"
		"\"max_events\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100000000, \"description\": "
		"\"slice cap (default 500000)\"}}}",
		"{\"type\": \"object\", \"required\": [\"path\", \"stats\", \"truncated\"], \"properties\": {"
		"\"path\": {\"type\": [\"string\", \"null\"]}, \"from_wall_ns\": {\"type\": \"integer\"}, "
		"\"to_wall_ns\": {\"type\": \"integer\"}, \"stats\": {\"type\": \"object\"}, \"truncated\": "
		"{\"type\": \"boolean\"}}}",
		cw_tool_export_timeline,
		0,
	},
	{
		"where",
		"Live stacks of a process",
		"A one-shot dump of every thread of a running process: Python stack (file, function, executing "
		"line) and native stack, as `causeway where --json`. Works only when the server runs as root on "
		"the host of the process; the process is paused for the moment of the dump when native is set.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"pid\"], \"properties\": {"
		"\"pid\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1073741823},"
		"\"native\": {\"type\": \"boolean\", \"description\": \"also native stacks (pauses the process "
		"briefly)\"}}}",
		"{\"type\": \"object\", \"required\": [\"pid\", \"threads\"], \"properties\": {\"pid\": {\"type\": "
		"\"integer\"}, \"python\": {\"type\": \"string\"}, \"python_error\": {\"type\": \"string\"}, "
		"\"threads\": {\"type\": \"array\"}}}",
		cw_tool_where,
		1,
	},
	{
		"run_demo",
		"Run a synthetic incident",
		"Generates a synthetic GPU incident scenario (the real pipeline, no GPU needed) into a new "
		"temporary database and returns causeway's diagnosis of it. Useful to see what each root cause "
		"looks like; the database path comes back for `causeway mcp --db`.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
		/* the enum is filled from the scenario table (cw_mcp_input_schema) */
		"\"scenario\": {\"type\": \"string\", \"enum\": [], \"description\": \"default "
		"incident\"},"
		"\"seed\": {\"type\": \"integer\", \"minimum\": 0, \"description\": \"random seed (default 1)\"},"
		"\"top_n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 100, \"description\": \"chains "
		"(default 10)\"}}}",
		"{\"type\": \"object\", \"required\": [\"scenario\", \"db\", \"diagnosis\"], \"properties\": {"
		"\"scenario\": {\"type\": \"string\"}, \"title\": {\"type\": \"string\"}, \"expect\": {\"type\": "
		"[\"string\", \"null\"]}, \"db\": {\"type\": [\"string\", \"null\"]}, \"events\": {\"type\": \"integer\"}, "
		"\"diagnosis\": {\"type\": \"object\"}, \"total_chains\": {\"type\": \"integer\"}, \"truncated\": "
		"{\"type\": \"boolean\"}}}",
		cw_tool_run_demo,
		0,
	},
	{
		"nccl_ranks",
		"NCCL ranks: who arrives late, who is missing",
		"Per rank of the NCCL jobs in the window (the table of `causeway explain --ranks --json`): "
		"collectives entered, how many it entered last (late) and the summed and mean lag of those "
		"arrivals, the last collective sequence number it entered, the share of its step spent waiting "
		"in collectives (comm_wait_share), whether it is the straggler every other rank waits for, and "
		"whether a collective has waited for it past the hang threshold (missing: the job is hung on "
		"it). Use it for \"which rank is slow\" or \"why is the job stuck\"; causal_chains with rank "
		"says why that rank is late. Lags are nanoseconds.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" WINDOW_PROPS ","
		"\"node\": {\"type\": \"string\", \"maxLength\": 255, \"description\": \"only ranks on this node "
		"(merged databases)\"},"
		"\"hang_after\": {\"type\": \"string\", \"maxLength\": 32, \"description\": \"floor of the hang "
		"threshold, a DURATION such as 30s (default: 20 x the median step, at least 10s)\"},"
		"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1024, \"description\": \"ranks "
		"(default 64)\"}}}",
		"{\"type\": \"object\", \"required\": [\"ranks\", \"rank_count\", \"total_ranks\", "
		"\"straggler_rank\", \"missing_ranks\", \"hang\", \"truncated\"], \"properties\": {\"node\": "
		"{\"type\": \"string\"}, \"window\": {\"type\": \"object\"}, \"ranks\": {\"type\": \"array\", "
		"\"items\": {\"type\": \"object\", \"required\": [\"node\", \"pid\", \"rank\", \"collectives\", "
		"\"late\", \"lag_ns\", \"mean_lag_ns\", \"last_seq\", \"comm_wait_share\", \"straggler\", "
		"\"missing\"], \"properties\": {\"node\": {\"type\": \"string\"}, \"pid\": {\"type\": "
		"\"integer\"}, \"tid\": {\"type\": \"integer\"}, \"rank\": {\"type\": [\"integer\", \"null\"]}, "
		"\"collectives\": {\"type\": \"integer\"}, \"late\": {\"type\": \"integer\"}, \"lag_ns\": "
		"{\"type\": \"integer\"}, \"mean_lag_ns\": {\"type\": \"integer\"}, \"last_seq\": {\"type\": "
		"\"integer\"}, \"waited_for_straggler_ns\": {\"type\": \"integer\"}, \"comm_wait_share\": "
		"{\"type\": \"number\"}, \"straggler\": {\"type\": \"boolean\"}, \"missing\": {\"type\": "
		"\"boolean\"}}}}, \"rank_count\": {\"type\": \"integer\"}, \"total_ranks\": {\"type\": "
		"\"integer\"}, \"straggler_rank\": {\"type\": [\"integer\", \"null\"]}, \"missing_ranks\": "
		"{\"type\": \"array\"}, \"hang\": {\"type\": \"boolean\"}, \"truncated\": {\"type\": "
		"\"boolean\"}}}",
		cw_tool_nccl_ranks,
		1,
	},
	{
		"slow_requests",
		"Slow inference requests",
		"The HTTP requests a traced inference server answered (`causeway trace --inference PORT`), "
		"slowest first (order \"recent\": newest first), with a per-route summary: request count, "
		"p50/p95/p99 of the duration and of the time to first token (TTFT: to the first response body "
		"bytes), errors (5xx, or no status and the connection closed) and client errors (4xx). Each "
		"request has its wall time, method, path, status, ttft_ms, duration_ms, streamed, bytes, "
		"pid/tid/comm and container; its pid and tid feed causal_chains and the timeline of that moment. "
		"Use it for \"which requests are slow\" on a serving node. Times are milliseconds; percentiles "
		"within ~4.4 % (log-linear histogram).",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" WINDOW_PROPS ","
		"\"path\": {\"type\": \"string\", \"maxLength\": 256, \"description\": \"only this path, or the "
		"paths starting with a prefix ending in *, e.g. /v1/*\"},"
		"\"method\": {\"type\": \"string\", \"maxLength\": 16, \"description\": \"only this method, e.g. "
		"POST\"},"
		"\"status\": {\"type\": \"string\", \"enum\": [\"1xx\", \"2xx\", \"3xx\", \"4xx\", \"5xx\", "
		"\"none\"], \"description\": \"only requests of this status class in the list (none: no status "
		"seen)\"},"
		"\"min_duration\": {\"type\": \"string\", \"maxLength\": 32, \"description\": \"only requests at "
		"least this long in the list, a DURATION such as 500ms\"},"
		"\"pid\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 4194304, \"description\": \"only "
		"this server process\"},"
		"\"node\": {\"type\": \"string\", \"maxLength\": 255, \"description\": \"only this node (merged "
		"databases)\"},"
		"\"order\": {\"type\": \"string\", \"enum\": [\"slowest\", \"recent\"], \"description\": \"default "
		"slowest\"},"
		"\"limit\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 1000, \"description\": \"requests "
		"(default 20)\"}}}",
		"{\"type\": \"object\", \"required\": [\"requests\", \"routes\", \"matched\", \"truncated\", "
		"\"requests_table\"], \"properties\": {\"node\": {\"type\": \"string\"}, \"window\": {\"type\": "
		"\"object\"}, \"order\": {\"type\": \"string\"}, \"requests_table\": {\"type\": \"boolean\"}, "
		"\"requests\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"wall\", "
		"\"wall_ns\", \"method\", \"path\", \"status\", \"duration_ms\", \"ttft_ms\", \"pid\", \"tid\"], "
		"\"properties\": {\"wall\": {\"type\": \"string\"}, \"wall_ns\": {\"type\": \"integer\"}, "
		"\"method\": {\"type\": [\"string\", \"null\"]}, \"path\": {\"type\": [\"string\", \"null\"]}, "
		"\"status\": {\"type\": [\"integer\", \"null\"]}, \"duration_ms\": {\"type\": \"number\"}, "
		"\"ttft_ms\": {\"type\": [\"number\", \"null\"]}, \"streamed\": {\"type\": \"boolean\"}, "
		"\"bytes_in\": {\"type\": \"integer\"}, \"bytes_out\": {\"type\": \"integer\"}, \"pid\": "
		"{\"type\": \"integer\"}, \"tid\": {\"type\": \"integer\"}, \"comm\": {\"type\": [\"string\", "
		"\"null\"]}, \"container\": {\"type\": [\"string\", \"null\"]}, \"node\": {\"type\": "
		"\"string\"}}}}, \"matched\": {\"type\": \"integer\"}, \"truncated\": {\"type\": \"boolean\"}, "
		"\"routes\": {\"type\": \"array\", \"items\": {\"type\": \"object\", \"required\": [\"path\", "
		"\"count\", \"errors\", \"p50_ms\", \"p95_ms\", \"p99_ms\"], \"properties\": {\"method\": "
		"{\"type\": [\"string\", \"null\"]}, \"path\": {\"type\": \"string\"}, \"count\": {\"type\": "
		"\"integer\"}, \"errors\": {\"type\": \"integer\"}, \"client_errors\": {\"type\": \"integer\"}, "
		"\"p50_ms\": {\"type\": \"number\"}, \"p95_ms\": {\"type\": \"number\"}, \"p99_ms\": {\"type\": "
		"\"number\"}, \"ttft_p50_ms\": {\"type\": [\"number\", \"null\"]}, \"ttft_p99_ms\": {\"type\": "
		"[\"number\", \"null\"]}}}}, \"summary_truncated\": {\"type\": \"boolean\"}}}",
		cw_tool_slow_requests,
		1,
	},
	{
		"check",
		"What this host supports",
		"What the server's host offers tracing (kernel, BTF, privileges, BPF features, CUDA/NCCL "
		"libraries on disk, CPython installs, GPU), each item ok/warn/fail with a recommendation, as "
		"`causeway check --json`. Use it when a trace is missing data or trace will not start.",
		"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {}}",
		"{\"type\": \"object\", \"required\": [\"ok\", \"checks\"], \"properties\": {\"ok\": {\"type\": "
		"\"boolean\"}, \"exit\": {\"type\": \"integer\"}, \"checks\": {\"type\": \"array\", \"items\": "
		"{\"type\": \"object\", \"required\": [\"name\", \"status\", \"detail\"]}}, \"libraries\": "
		"{\"type\": \"array\"}, \"python\": {\"type\": \"array\"}}}",
		cw_tool_check,
		1,
	},
};

const struct cw_mcp_tool *cw_mcp_tools(size_t *n)
{
	*n = sizeof(tools) / sizeof(tools[0]);
	return tools;
}
