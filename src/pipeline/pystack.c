#include "pipeline/pystack.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
#include "util/u64map.h"
#include "util/utf8.h"

/* Whether a Python source file is library code (stdlib, site-packages,
 * torch internals, frozen modules) rather than the user's. */
static int cw_py_is_library_file(const char *file)
{
	static const char *const markers[] = {
		"/site-packages/", "/dist-packages/", "/lib/python3", "/torch/", "<frozen ", "<string>",
	};
	size_t i;

	if (!file || !*file)
		return 1;
	for (i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
		if (strstr(file, markers[i]))
			return 1;
	return 0;
}

int64_t cw_pystack_intern_via(struct cw_writer *w, const struct cw_py_resolver *py, const struct cw_pystack *s,
			      uint32_t via, uint64_t *unresolved)
{
	struct cw_py_location loc[CW_PY_MAX_FRAMES];
	uint32_t n = s->nframes < CW_PY_MAX_FRAMES ? s->nframes : CW_PY_MAX_FRAMES;
	uint64_t hash = CW_FNV_INIT;
	int user = -1, nres = 0;
	json_t *arr;
	char *frames;
	int64_t id;
	uint32_t i;

	if (!py || !py->resolve) {
		*unresolved += n;
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (py->resolve(py->ctx, s->hdr.pid, s->frames[i].code, s->frames[i].lasti, &loc[nres]) != 0) {
			(*unresolved)++;
			continue;
		}
		loc[nres].file[sizeof(loc[nres].file) - 1] = '\0';
		loc[nres].function[sizeof(loc[nres].function) - 1] = '\0';
		hash = cw_fnv1a(hash, loc[nres].file, strlen(loc[nres].file) + 1);
		hash = cw_fnv1a(hash, loc[nres].function, strlen(loc[nres].function) + 1);
		hash = cw_fnv1a(hash, &loc[nres].line, sizeof(loc[nres].line));
		if (user < 0 && !cw_py_is_library_file(loc[nres].file))
			user = nres;
		nres++;
	}
	if (!nres)
		return 0;
	if (via)
		hash = cw_fnv1a(hash, &via, sizeof(via));
	if (cw_writer_pystack_cached(w, hash, &id))
		return id;
	if (user < 0)
		user = 0;
	arr = json_array();
	if (!arr)
		return -ENOMEM;
	for (i = 0; i < (uint32_t)nres; i++)
		json_array_append_new(arr, json_pack("{s:o,s:i,s:o}", "file", cw_json_str(loc[i].file), "line", loc[i].line,
						     "function", cw_json_str(loc[i].function)));
	if (s->truncated)
		json_array_append_new(arr, json_pack("{s:b}", "truncated", 1));
	if (via)
		json_array_append_new(arr, json_pack("{s:I}", "python_via", (json_int_t)via));
	frames = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	if (!frames)
		return -ENOMEM;
	id = cw_writer_intern_pystack(w, hash, nres, frames, loc[user].file, loc[user].line, loc[user].function,
				      (int64_t)via);
	free(frames);
	return id;
}

int64_t cw_pystack_intern(struct cw_writer *w, const struct cw_py_resolver *py, const struct cw_pystack *s,
			  uint64_t *unresolved)
{
	return cw_pystack_intern_via(w, py, s, 0, unresolved);
}

int64_t cw_ustack_intern(struct cw_writer *w, const struct cw_symbolizer *sym, const struct cw_ustack *s)
{
	uint32_t n = s->nips < CW_USTACK_MAX ? s->nips : CW_USTACK_MAX, i;
	uint64_t hash = CW_FNV_INIT;
	struct strbuf sb;
	char lines[CW_USTACK_MAX][512]; /* 16 KiB */
	int64_t id;

	if (!n)
		return 0;
	/* The same addresses in the same process symbolize the same way, so the
	 * raw addresses and pid are the identity; symbolizing happens once. */
	hash = cw_fnv1a(hash, &s->hdr.pid, sizeof(s->hdr.pid));
	hash = cw_fnv1a(hash, s->ips, n * sizeof(s->ips[0]));
	strbuf_init(&sb, 64 * 1024);
	if (!sym || !sym->symbolize_stack ||
	    sym->symbolize_stack(sym->ctx, s->hdr.pid, (const uint64_t *)s->ips, n, &lines[0][0], sizeof(lines[0])))
		for (i = 0; i < n; i++)
			snprintf(lines[i], sizeof(lines[i]), "0x%llx", (unsigned long long)s->ips[i]);
	for (i = 0; i < n; i++)
		strbuf_addf(&sb, "%s%s", i ? "\n" : "", lines[i]);
	id = cw_writer_intern_stack(w, hash, (int)n, strbuf_str(&sb));
	strbuf_release(&sb);
	return id;
}
