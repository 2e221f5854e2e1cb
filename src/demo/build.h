/* The demo database of `causeway demo` and the MCP run_demo tool (one
 * implementation, two front ends). */
#ifndef CW_DEMO_BUILD_H
#define CW_DEMO_BUILD_H

#include <stddef.h>

struct cw_demo_opts;
struct cw_demo_result;
struct cw_explain_result;

/* The scenario into db (built beside it, renamed over it), explained, the
 * chains stored (stamped now when now, else at the run's end). db is
 * refused (err says why) when a causeway writer holds it or it is not a
 * demo database, unless force. Returns 0 or -errno with err filled: -E2BIG
 * when db's path is too long, -EBADMSG when the pipeline refused generated
 * records, another -errno when the database could not be read or written. */
int cw_demo_build(const char *db, const struct cw_demo_opts *o, int now, int force,
		  struct cw_demo_result *res, struct cw_explain_result *ex, char *err, size_t errlen);

#endif
