/* One readable stack for a chain: the native frames of its representative
 * slow call with the Python frames of the same call spliced in where the
 * interpreter runs them ("[py] file:line in func"), innermost first. */
#ifndef CW_ANALYSIS_STACK_RENDER_H
#define CW_ANALYSIS_STACK_RENDER_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define CW_STACK_MAX_FRAMES 48

struct cw_stack_frame {
	int is_py;
	int line;           /* Python frames; 0 for native */
	char file[200];     /* Python frames */
	char function[160]; /* Python: function; native: "object!symbol+0xoff" */
};

/* Splices npy Python frames into nnative native frames (both innermost
 * first). The Python frames go in at the innermost interpreter frame
 * (_PyEval_EvalFrameDefault), after it; when there are as many interpreter
 * frames as Python frames (3.10, one C call per Python call), one each.
 * Without an interpreter frame they follow the native frames. Returns the
 * number of frames written (at most cap). */
int cw_stack_splice(const char *const *native, int nnative, const struct cw_stack_frame *py, int npy,
		    struct cw_stack_frame *out, int cap);

/* Loads py_stacks.id py_id and stacks.id native_id (0: none) and splices
 * them into out. Returns the frame count, or -errno. */
int cw_stack_load(sqlite3 *db, int64_t py_id, int64_t native_id, struct cw_stack_frame *out, int cap);

/* "[py] file:line in func" or the native text. */
void cw_stack_frame_text(const struct cw_stack_frame *f, char *buf, size_t len);

#endif
