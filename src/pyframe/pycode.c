#include "pyframe/pycode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STR_MAX_CHARS 4096

static size_t put_utf8(char *buf, size_t len, size_t pos, uint32_t c)
{
	char tmp[4];
	size_t n;

	if (c < 0x80) {
		tmp[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		tmp[0] = (char)(0xc0 | (c >> 6));
		tmp[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		tmp[0] = (char)(0xe0 | (c >> 12));
		tmp[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		tmp[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		if (c > 0x10ffff)
			c = 0xfffd;
		tmp[0] = (char)(0xf0 | (c >> 18));
		tmp[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		tmp[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		tmp[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	if (pos + n >= len)
		return pos; /* truncate at a character boundary */
	memcpy(buf + pos, tmp, n);
	return pos + n;
}

int cw_py_read_str(struct cw_py_proc *p, uint64_t obj, char *buf, size_t len)
{
	const struct cw_py_offsets *o = &p->off;
	uint64_t length, hdr_end = o->ascii_size;
	uint32_t state;
	unsigned kind, compact, ascii;
	uint8_t raw[STR_MAX_CHARS * 4];
	size_t want, i, pos = 0;
	int err;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	err = cw_rmem_read_u64(&p->mem, obj + o->unicode_length, &length);
	err = err ?: cw_rmem_read(&p->mem, obj + o->unicode_state, &state, sizeof(state));
	if (err)
		return err;
	/* state bit fields (Include/cpython/unicodeobject.h): interned:2,
	 * kind:3, compact:1, ascii:1; on free-threaded builds interned is an
	 * unsigned char and kind starts at bit 8 (str_kind_shift) */
	kind = (state >> o->str_kind_shift) & 7;
	compact = (state >> (o->str_kind_shift + 3)) & 1;
	ascii = (state >> (o->str_kind_shift + 4)) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
		return -EINVAL;
	if (length > (1u << 20))
		return -EINVAL;
	if (!ascii) /* PyCompactUnicodeObject adds utf8_length, utf8 (+ wstr_length before 3.12) */
		hdr_end += p->off.minor <= 11 ? 24 : 16;
	if (length > STR_MAX_CHARS)
		length = STR_MAX_CHARS;
	want = (size_t)length * kind;
	err = cw_rmem_read(&p->mem, obj + hdr_end, raw, want);
	if (err)
		return err;
	for (i = 0; i < length; i++) {
		uint32_t c = raw[i];
		size_t np;

		if (kind == 2) {
			uint16_t c16;

			memcpy(&c16, raw + 2 * i, 2);
			c = c16;
		} else if (kind == 4) {
			memcpy(&c, raw + 4 * i, 4);
		}

		if (c == 0)
			c = 0xfffd;
		np = put_utf8(buf, len, pos, c);
		if (np == pos)
			break;
		pos = np;
	}
	buf[pos] = '\0';
	return 0;
}

/* Reads a bytes object: *len gets ob_size, and the bytes are copied into
 * a malloc'd *data (caller frees). Sizes over max are -E2BIG. */
static int cw_py_read_bytes(struct cw_py_proc *p, uint64_t obj, size_t max, uint8_t **data, size_t *len)
{
	int64_t size;
	uint8_t *d;
	int err;

	*data = NULL;
	*len = 0;
	err = cw_rmem_read(&p->mem, obj + p->off.var_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > max)
		return -E2BIG;
	d = malloc(size ? (size_t)size : 1);
	if (!d)
		return -ENOMEM;
	err = cw_rmem_read(&p->mem, obj + p->off.bytes_sval, d, (size_t)size);
	if (err) {
		free(d);
		return err;
	}
	*data = d;
	*len = (size_t)size;
	return 0;
}

int cw_py_is_code(struct cw_py_proc *p, uint64_t obj)
{
	uint64_t type, name;
	char tn[8];
	int err;

	if (!cw_rmem_ptr_ok(obj) || (obj & 7))
		return 0;
	err = cw_rmem_read_u64(&p->mem, obj + p->off.ob_type, &type);
	if (err)
		return err;
	if (!cw_rmem_ptr_ok(type))
		return 0;
	if (p->code_type)
		return type == p->code_type;
	err = cw_rmem_read_ptr(&p->mem, type + p->off.tp_name, &name);
	err = err ?: cw_rmem_read(&p->mem, name, tn, 5);
	if (err)
		return err == -EFAULT ? 0 : err;
	if (memcmp(tn, "code", 5) != 0)
		return 0;
	p->code_type = type;
	return 1;
}

int cw_py_code_fingerprint(struct cw_py_proc *p, uint64_t code, struct cw_py_code_fp *fp)
{
	const struct cw_py_offsets *o = &p->off;
	uint8_t head[512];
	uint32_t end = o->co_firstlineno + 4;
	int32_t fl;

	end = o->co_filename + 8 > end ? o->co_filename + 8 : end;
	end = o->co_name + 8 > end ? o->co_name + 8 : end;
	end = o->co_linetable + 8 > end ? o->co_linetable + 8 : end;
	if (o->co_qualname)
		end = o->co_qualname + 8 > end ? o->co_qualname + 8 : end;
	if (end > sizeof(head))
		return -EPROTO;
	if (!cw_rmem_ptr_ok(code) || (code & 7))
		return -EFAULT;
	int err = cw_rmem_read(&p->mem, code, head, end);
	if (err)
		return err;
	memcpy(&fp->filename, head + o->co_filename, 8);
	memcpy(&fp->name, head + o->co_name, 8);
	fp->qualname = 0;
	if (o->co_qualname)
		memcpy(&fp->qualname, head + o->co_qualname, 8);
	memcpy(&fp->linetable, head + o->co_linetable, 8);
	memcpy(&fl, head + o->co_firstlineno, 4);
	fp->firstlineno = fl;
	if (!cw_rmem_ptr_ok(fp->filename) || !cw_rmem_ptr_ok(fp->name) || !cw_rmem_ptr_ok(fp->linetable) ||
	    (o->co_qualname && !cw_rmem_ptr_ok(fp->qualname)) || fl < 0 || fl > 100000000)
		return -EINVAL;
	return 0;
}

int cw_py_code_read(struct cw_py_proc *p, uint64_t code, struct cw_py_code *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	err = cw_py_code_fingerprint(p, code, &out->fp);
	err = err ?: cw_py_read_str(p, out->fp.filename, out->file, sizeof(out->file));
	err = err ?: cw_py_read_str(p, out->fp.qualname ? out->fp.qualname : out->fp.name, out->function,
				    sizeof(out->function));
	err = err ?: cw_py_read_bytes(p, out->fp.linetable, CW_PY_LINETABLE_MAX, &out->linetable,
				      &out->linetable_len);
	if (err)
		cw_py_code_release(out);
	return err;
}

void cw_py_code_release(struct cw_py_code *c)
{
	free(c->linetable);
	c->linetable = NULL;
	c->linetable_len = 0;
}
