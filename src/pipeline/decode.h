/* decode: validates a raw record against the events.h ABI before anything
 * reads its fields. Ring buffers are trusted kernel memory, but the same
 * decoder takes recorded streams and demo input, so it checks everything. */
#ifndef CW_PIPELINE_DECODE_H
#define CW_PIPELINE_DECODE_H

#include <stddef.h>

#include "bpf/events.h"

enum cw_decode_result {
	CW_DECODE_OK = 0,
	CW_DECODE_SHORT,   /* smaller than its header or its type's layout */
	CW_DECODE_VERSION, /* written by another ABI version */
	CW_DECODE_TYPE,    /* unknown record type, source or op */
};

/* Checks data/size; on CW_DECODE_OK, *hdr points into data. */
enum cw_decode_result cw_decode(const void *data, size_t size, const struct cw_hdr **hdr);
/* Minimum size of a record of this type, 0 if the type is unknown. */
size_t cw_record_size(unsigned type);

#endif
