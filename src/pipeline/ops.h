/* Names of sources and ops: the words the store, the CLI and the docs use
 * for the numeric codes of events.h. */
#ifndef CW_PIPELINE_OPS_H
#define CW_PIPELINE_OPS_H

/* NULL for an unknown code. */
const char *cw_source_name(unsigned source);
const char *cw_op_name(unsigned op);
/* The source an op belongs to, 0 if unknown. */
unsigned cw_op_source(unsigned op);
/* Reverse lookup; 0 when unknown. */
unsigned cw_op_lookup(const char *name);

#endif
