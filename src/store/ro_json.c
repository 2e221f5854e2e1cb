/* JSON for user SQL results (ro_query.h): the shape `query --json`, the
 * HTTPS API and MCP return. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/ro_query.h"
#include "util/utf8.h"

int cw_ro_value_from_json(json_t *v, struct cw_ro_value *p)
{
	memset(p, 0, sizeof(*p));
	if (json_is_null(v)) {
		p->type = CW_RO_NULL;
	} else if (json_is_integer(v)) {
		p->type = CW_RO_INT;
		p->i = json_integer_value(v);
	} else if (json_is_real(v)) {
		p->type = CW_RO_REAL;
		p->d = json_real_value(v);
	} else if (json_is_string(v)) {
		p->type = CW_RO_TEXT;
		p->p = json_string_value(v);
		p->len = json_string_length(v);
	} else if (json_is_boolean(v)) {
		p->type = CW_RO_INT;
		p->i = json_is_true(v);
	} else {
		return -EINVAL;
	}
	return 0;
}

/* Bytes s takes as a JSON string with its quotes, never fewer than any
 * output writes for it: a control byte is \u00XX, a quote or backslash
 * two bytes, and a byte >= 0x80 counted as three, the size of the U+FFFD
 * that may replace it when it is not valid UTF-8. */
static size_t text_out_bytes(const unsigned char *s, size_t len)
{
	size_t n = 2, i;

	for (i = 0; i < len; i++)
		n += s[i] < 0x20 ? 6 : s[i] == '"' || s[i] == '\\' ? 2 : s[i] >= 0x80 ? 3 : 1;
	return n;
}

size_t cw_ro_value_out_bytes(const char *name, const struct cw_ro_value *v)
{
	/* The name as an object key, its colon, comma and indentation. */
	size_t n = text_out_bytes((const unsigned char *)name, strlen(name)) + 8;

	switch (v->type) {
	case CW_RO_INT:
	case CW_RO_REAL:
		return n + 24;
	case CW_RO_TEXT:
		return n + text_out_bytes(v->p, v->len);
	case CW_RO_BLOB:
		return n + 2 * v->len + 2;
	default:
		return n + 4;
	}
}

json_t *cw_ro_value_json(const struct cw_ro_value *v)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b;
	json_t *j;
	char *s;
	size_t i;

	switch (v->type) {
	case CW_RO_INT:
		return json_integer(v->i);
	case CW_RO_REAL:
		return isfinite(v->d) ? json_real(v->d) : json_null();
	case CW_RO_TEXT:
		/* Invalid UTF-8 becomes U+FFFD: jansson refuses it as is. */
		return cw_json_strn(v->p, v->len);
	case CW_RO_BLOB:
		s = malloc(v->len * 2 + 1);
		if (!s)
			return NULL;
		b = v->p;
		for (i = 0; i < v->len; i++) {
			s[2 * i] = hex[b[i] >> 4];
			s[2 * i + 1] = hex[b[i] & 15];
		}
		s[2 * v->len] = '\0';
		j = cw_json_str(s);
		free(s);
		return j;
	default:
		return json_null();
	}
}

/* Row object for one row; repeated column names get a "_2", "_3" suffix
 * so no value is silently overwritten. */
static json_t *cw_ro_row_json(int ncols, const char *const *names, const struct cw_ro_value *vals)
{
	json_t *o = json_object();
	int i;

	if (!o)
		return NULL;
	for (i = 0; i < ncols; i++) {
		char key[256];
		int k = 2;

		char *name = cw_utf8_fix(names[i], strlen(names[i]), NULL);

		if (!name) {
			json_decref(o);
			return NULL;
		}
		snprintf(key, sizeof(key), "%s", name);
		while (json_object_get(o, key))
			snprintf(key, sizeof(key), "%s_%d", name, k++);
		free(name);
		if (cw_json_set(o, key, cw_ro_value_json(&vals[i]))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *cw_ro_result_json(const struct cw_ro_result *r)
{
	json_t *a = json_array();
	int64_t i;

	if (!a)
		return NULL;
	for (i = 0; i < r->nrows; i++) {
		json_t *row = cw_ro_row_json(r->ncols, (const char *const *)r->names,
					     &r->vals[(size_t)i * (size_t)r->ncols]);

		if (!row || json_array_append_new(a, row)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}
