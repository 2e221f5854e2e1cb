/* Fuzzes the decode -> pairing -> store path with arbitrary record
 * streams: the input is split into records by a 2-byte length prefix, so the
 * fuzzer controls sizes, headers and payloads. Recorded streams and demo input
 * use this path too, so no byte sequence may crash it. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "store/store.h"
#include "store/writer.h"

static struct cw_store *store;
static struct cw_writer *writer;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_pipeline_opts po = { 0 };
	struct cw_pipeline *p;
	uint8_t rec[1024];
	size_t pos = 0;

	if (!store) {
		struct cw_writer_opts wo = { .node = "fuzz", .session_id = 1 };
		char err[256];

		if (cw_store_open(&store, ":memory:", CW_STORE_CREATE, err, sizeof(err)) ||
		    cw_writer_new(&writer, store, &wo))
			__builtin_trap();
	}
	po.writer = writer;
	if (cw_pipeline_new(&p, &po))
		return 0;
	while (pos + 2 <= size) {
		size_t len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;

		pos += 2;
		if (len > sizeof(rec) || len > size - pos)
			len = size - pos < sizeof(rec) ? size - pos : sizeof(rec);
		/* Copy so the record is aligned, as ring-buffer samples are. */
		memcpy(rec, data + pos, len);
		cw_pipeline_feed(p, rec, len);
		pos += len;
	}
	cw_pipeline_flush(p, 1ULL << 40, 1ULL << 30);
	cw_pipeline_free(p);
	return 0;
}
