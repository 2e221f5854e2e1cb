#include "analysis/stack_render.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

/* The C function that executes Python frames, in libpython or a static
 * interpreter; "!" anchors it to the symbol part of "object!symbol+0x..". */
static int is_interpreter_frame(const char *native)
{
	return strstr(native, "!_PyEval_EvalFrameDefault") != NULL;
}

static void native_frame(struct cw_stack_frame *f, const char *text)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->function, sizeof(f->function), "%s", text);
}

int cw_stack_splice(const char *const *native, int nnative, const struct cw_stack_frame *py, int npy,
		    struct cw_stack_frame *out, int cap)
{
	int n = 0, next_py = 0, ninterp = 0, one_each, i;

	for (i = 0; i < nnative; i++)
		ninterp += is_interpreter_frame(native[i]);
	one_each = ninterp == npy;
	for (i = 0; i < nnative && n < cap; i++) {
		native_frame(&out[n++], native[i]);
		if (!is_interpreter_frame(native[i]) || next_py >= npy)
			continue;
		if (one_each) {
			if (n < cap)
				out[n++] = py[next_py++];
		} else
			while (next_py < npy && n < cap)
				out[n++] = py[next_py++];
	}
	while (next_py < npy && n < cap)
		out[n++] = py[next_py++];
	return n;
}

static int load_py(sqlite3 *db, int64_t id, struct cw_stack_frame *py, int cap)
{
	sqlite3_stmt *st = NULL;
	json_t *arr = NULL, *v;
	size_t i;
	int n = 0, rc;

	rc = sqlite3_prepare_v2(db, "SELECT frames FROM py_stacks WHERE id = ?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
		arr = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	json_array_foreach(arr, i, v) {
		const char *file = json_string_value(json_object_get(v, "file"));
		const char *fn = json_string_value(json_object_get(v, "function"));

		if (n == cap || !file) /* {"truncated": true} ends a cut stack */
			break;
		memset(&py[n], 0, sizeof(py[n]));
		py[n].is_py = 1;
		py[n].line = (int)json_integer_value(json_object_get(v, "line"));
		snprintf(py[n].file, sizeof(py[n].file), "%s", file);
		snprintf(py[n].function, sizeof(py[n].function), "%s", fn ? fn : "?");
		n++;
	}
	json_decref(arr);
	return n;
}

/* Splits stacks.frames (one frame per line) in place into at most cap lines. */
static int load_native(sqlite3 *db, int64_t id, char **text, const char **lines, int cap)
{
	sqlite3_stmt *st = NULL;
	char *p, *nl;
	int n = 0, rc;

	*text = NULL;
	rc = sqlite3_prepare_v2(db, "SELECT frames FROM stacks WHERE id = ?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
		*text = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	for (p = *text; p && *p && n < cap; p = nl + 1) {
		lines[n++] = p;
		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
	}
	return n;
}

int cw_stack_load(sqlite3 *db, int64_t py_id, int64_t native_id, struct cw_stack_frame *out, int cap)
{
	struct cw_stack_frame py[CW_STACK_MAX_FRAMES];
	const char *lines[CW_STACK_MAX_FRAMES];
	char *text = NULL;
	int npy = 0, nnative = 0, n;

	if (py_id > 0 && (npy = load_py(db, py_id, py, CW_STACK_MAX_FRAMES)) < 0)
		return npy;
	if (native_id > 0 && (nnative = load_native(db, native_id, &text, lines, CW_STACK_MAX_FRAMES)) < 0)
		return nnative;
	n = cw_stack_splice(lines, nnative, py, npy, out, cap);
	free(text);
	return n;
}

void cw_stack_frame_text(const struct cw_stack_frame *f, char *buf, size_t len)
{
	if (f->is_py)
		snprintf(buf, len, "[py] %s:%d in %s", f->file, f->line, f->function);
	else
		snprintf(buf, len, "%s", f->function);
}
