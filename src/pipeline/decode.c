#include "pipeline/decode.h"

#include "pipeline/ops.h"

size_t cw_record_size(unsigned type)
{
	switch (type) {
	case CW_REC_CALL_ENTRY: return sizeof(struct cw_call_entry);
	case CW_REC_CALL_RETURN: return sizeof(struct cw_call_return);
	case CW_REC_OFFCPU: return sizeof(struct cw_offcpu);
	case CW_REC_BLOCK_IO: return sizeof(struct cw_block_io);
	case CW_REC_NET: return sizeof(struct cw_net);
	case CW_REC_MEM: return sizeof(struct cw_mem);
	case CW_REC_PROC: return sizeof(struct cw_proc);
	case CW_REC_PYSTACK: return sizeof(struct cw_pystack);
	case CW_REC_KERNEL_NAME: return sizeof(struct cw_kernel_name);
	case CW_REC_SNAPSHOT: return sizeof(struct cw_snapshot);
	case CW_REC_USTACK: return sizeof(struct cw_ustack);
	case CW_REC_CALL: return sizeof(struct cw_call);
	case CW_REC_HTTP_IO: return sizeof(struct cw_http_io);
	default: return 0;
	}
}

enum cw_decode_result cw_decode(const void *data, size_t size, const struct cw_hdr **out)
{
	const struct cw_hdr *h = data;
	size_t need;

	if (!data || size < sizeof(*h))
		return CW_DECODE_SHORT;
	if (h->version != CW_EVENTS_VERSION)
		return CW_DECODE_VERSION;
	need = cw_record_size(h->type);
	if (!need)
		return CW_DECODE_TYPE;
	/* The header's size must describe this very record: a ring-buffer
	 * sample is exactly one record. */
	if (h->size != size || size < need)
		return CW_DECODE_SHORT;
	if (!cw_source_name(h->source) || (h->op && !cw_op_name(h->op)))
		return CW_DECODE_TYPE;
	switch (h->type) {
	case CW_REC_PYSTACK:
	case CW_REC_USTACK:
	case CW_REC_KERNEL_NAME:
		/* Tied to an entry or a process, not stored under an op. */
		break;
	case CW_REC_CALL_ENTRY:
	case CW_REC_CALL_RETURN:
	case CW_REC_CALL:
		/* Graph calls exist in the runtime and the driver, and a probe may
		 * report them under either library's source. */
		if (!h->op || (cw_op_source(h->op) != h->source &&
			       !(cw_op_source(h->op) == CW_SRC_GRAPH &&
				 (h->source == CW_SRC_CUDA || h->source == CW_SRC_DRIVER))))
			return CW_DECODE_TYPE;
		break;
	default:
		if (!h->op || cw_op_source(h->op) != h->source)
			return CW_DECODE_TYPE;
	}
	*out = h;
	return CW_DECODE_OK;
}
