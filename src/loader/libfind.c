#define _GNU_SOURCE /* strchrnul */
#include "loader/libfind.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/elfsyms.h"
#include "util/fileset.h"

#define MAX_DIRS 256

struct dirlist {
	char *dir[MAX_DIRS];
	int n;
};

static const char *rootp(const char *root)
{
	return root && *root ? root : "";
}

/* Adds dir (already root-prefixed) once. */
static void dirs_add(struct dirlist *d, const char *dir)
{
	int i;

	if (d->n == MAX_DIRS || !*dir)
		return;
	for (i = 0; i < d->n; i++)
		if (!strcmp(d->dir[i], dir))
			return;
	d->dir[d->n] = strdup(dir);
	if (d->dir[d->n])
		d->n++;
}

/* Adds every match of root + pattern. */
static void dirs_glob(struct dirlist *d, const char *root, const char *pattern)
{
	char pat[PATH_MAX];
	glob_t g;
	size_t i;

	snprintf(pat, sizeof(pat), "%s%s", rootp(root), pattern);
	if (glob(pat, GLOB_NOSORT | GLOB_ONLYDIR, NULL, &g) != 0)
		return;
	for (i = 0; i < g.gl_pathc; i++)
		dirs_add(d, g.gl_pathv[i]);
	globfree(&g);
}

static void dirs_free(struct dirlist *d)
{
	int i;

	for (i = 0; i < d->n; i++)
		free(d->dir[i]);
	d->n = 0;
}

/* /etc/ld.so.conf: one directory per line, '#' comments, and
 * "include GLOB" (relative globs are relative to /etc). */
static void read_ldconf(struct dirlist *d, const char *root, const char *file, int depth)
{
	char path[PATH_MAX], line[PATH_MAX];
	FILE *f;

	if (depth > 4)
		return;
	snprintf(path, sizeof(path), "%s%s", rootp(root), file);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *e;

		*strchrnul(p, '#') = '\0';
		while (isspace((unsigned char)*p))
			p++;
		e = p + strlen(p);
		while (e > p && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (!*p)
			continue;
		if (!strncmp(p, "include", 7) && isspace((unsigned char)p[7])) {
			char pat[PATH_MAX];
			glob_t g;
			size_t i;

			p += 8;
			while (isspace((unsigned char)*p))
				p++;
			snprintf(pat, sizeof(pat), "%s%s%s", rootp(root), *p == '/' ? "" : "/etc/", p);
			if (glob(pat, 0, NULL, &g) == 0) {
				for (i = 0; i < g.gl_pathc; i++)
					read_ldconf(d, NULL, g.gl_pathv[i], depth + 1);
				globfree(&g);
			}
		} else if (*p == '/') {
			snprintf(path, sizeof(path), "%s%s", rootp(root), p);
			dirs_add(d, path);
		}
	}
	fclose(f);
}

static const char *const system_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL,
};

/* Conda prefixes and the Pythons whose site-packages may hold pip's
 * nvidia-* wheels (nvidia/cuda_runtime/lib, nvidia/nccl/lib, ...). */
static const char *const prefixes[] = {
	"/usr", "/usr/local", "/opt/conda", "HOME/.local", "HOME/.pyenv/versions/*",
	"HOME/miniconda3", "HOME/anaconda3", "HOME/miniforge3", "HOME/miniconda3/envs/*",
	"HOME/anaconda3/envs/*", "/opt/conda/envs/*", NULL,
};

static void expand_home(char *out, size_t len, const char *p, const char *home)
{
	if (!strncmp(p, "HOME/", 5))
		snprintf(out, len, "%s/%s", home, p + 5);
	else
		snprintf(out, len, "%s", p);
}

static void cuda_dirs(struct dirlist *d, const char *root, const char *home)
{
	const char *const *p;
	const char *env;
	char buf[PATH_MAX], pat[PATH_MAX + 64];

	env = getenv("LD_LIBRARY_PATH");
	if (env) {
		char *copy = strdup(env), *save = NULL, *tok;

		for (tok = copy ? strtok_r(copy, ":", &save) : NULL; tok; tok = strtok_r(NULL, ":", &save)) {
			snprintf(buf, sizeof(buf), "%s%s", rootp(root), tok);
			if (*tok == '/')
				dirs_add(d, buf);
		}
		free(copy);
	}
	read_ldconf(d, root, "/etc/ld.so.conf", 0);
	for (p = system_dirs; *p; p++) {
		snprintf(buf, sizeof(buf), "%s%s", rootp(root), *p);
		dirs_add(d, buf);
	}
	/* CUDA's own prefix: lib64 (toolkit <= 12), lib and targets/ARCH/lib
	 * (13), and stubs/ where the toolkit keeps a link-time libcuda. */
	dirs_glob(d, root, "/usr/local/cuda*/lib64");
	dirs_glob(d, root, "/usr/local/cuda*/lib");
	dirs_glob(d, root, "/usr/local/cuda*/targets/*/lib");
	dirs_glob(d, root, "/usr/local/cuda*/lib64/stubs");
	dirs_glob(d, root, "/usr/local/cuda*/lib/stubs");
	dirs_glob(d, root, "/usr/local/cuda*/targets/*/lib/stubs");
	env = getenv("CONDA_PREFIX");
	if (env && *env == '/') {
		snprintf(pat, sizeof(pat), "%s/lib", env);
		dirs_glob(d, root, pat);
		snprintf(pat, sizeof(pat), "%s/lib/python3*/site-packages/nvidia/*/lib", env);
		dirs_glob(d, root, pat);
	}
	for (p = prefixes; *p; p++) {
		expand_home(buf, sizeof(buf), *p, home);
		if (strncmp(buf, "/usr", 4) != 0) {
			snprintf(pat, sizeof(pat), "%s/lib", buf);
			dirs_glob(d, root, pat);
		}
		snprintf(pat, sizeof(pat), "%s/lib/python3*/site-packages/nvidia/*/lib", buf);
		dirs_glob(d, root, pat);
		snprintf(pat, sizeof(pat), "%s/lib/python3*/dist-packages/nvidia/*/lib", buf);
		dirs_glob(d, root, pat);
	}
}

static const char *home_dir(const char *home)
{
	if (home && *home)
		return home;
	home = getenv("HOME");
	return home && *home ? home : "/root";
}

/* Fills what the file itself says: SONAME, and the version strings a
 * library prints (NCCL's banner), read from .rodata. */
static void read_details(struct cw_found_lib *lib)
{
	struct cw_elf *e;
	const char *p;

	if (cw_elf_open(&e, lib->real) == 0) {
		snprintf(lib->soname, sizeof(lib->soname), "%s", cw_elf_soname(e));
		if (lib->kind == CW_LIB_NCCL)
			cw_elf_find_rodata_string(e, "NCCL version ", lib->detail, sizeof(lib->detail));
		cw_elf_close(e);
	}
	/* The toolkit directory names the CUDA release the runtime came with. */
	p = strstr(lib->real, "/cuda-");
	if (!lib->detail[0] && p && isdigit((unsigned char)p[6])) {
		size_t n = strcspn(p + 6, "/");

		snprintf(lib->detail, sizeof(lib->detail), "CUDA toolkit %.*s", (int)n, p + 6);
	}
}

int cw_libfind_cuda(const char *root, cw_found_lib_fn fn, void *ctx)
{
	struct dirlist d = { .n = 0 };
	struct cw_fileset *s = calloc(1, sizeof(*s));
	struct cw_found_lib *lib = calloc(1, sizeof(*lib));
	int i, count = 0, rc = 0;

	if (!s || !lib) {
		free(s);
		free(lib);
		return -ENOMEM;
	}
	cuda_dirs(&d, root, home_dir(NULL));
	for (i = 0; i < d.n && !rc; i++) {
		DIR *dir = opendir(d.dir[i]);
		struct dirent *de;

		if (!dir)
			continue;
		while (!rc && (de = readdir(dir))) {
			struct stat st;
			int kind = cw_lib_kind_of(de->d_name);

			if (kind < 0)
				continue;
			memset(lib, 0, sizeof(*lib));
			snprintf(lib->path, sizeof(lib->path), "%s/%s", d.dir[i], de->d_name);
			if (stat(lib->path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			if (!cw_fileset_add(s, st.st_dev, st.st_ino))
				continue;
			lib->kind = (enum cw_lib_kind)kind;
			lib->dev = st.st_dev;
			lib->ino = st.st_ino;
			if (!realpath(lib->path, lib->real))
				snprintf(lib->real, sizeof(lib->real), "%s", lib->path);
			if (cw_lib_version(lib->path, lib->version, sizeof(lib->version)) != 0)
				lib->version[0] = '\0';
			lib->stub = strstr(lib->real, "/stubs/") != NULL;
			read_details(lib);
			count++;
			if (fn)
				rc = fn(ctx, lib);
		}
		closedir(dir);
	}
	dirs_free(&d);
	free(s);
	free(lib);
	return rc ? rc : count;
}

/* ---- CPython ---- */

static int exports_runtime(const char *path)
{
	struct cw_elf *e;
	struct cw_elf_sym sym;
	int yes;

	if (cw_elf_open(&e, path))
		return 0;
	/* _PyRuntime: the one global from which every thread state is reached
	 * (3.7+); it must be in .dynsym for causeway to find it in a process. */
	yes = cw_elf_find_sym(e, "_PyRuntime", &sym) == 0;
	cw_elf_close(e);
	return yes;
}

/* "libpython3.12.so.1.0", "python3.12", "libpython3.6m.so.1.0" -> 3, 12. */
static int parse_minor(const char *name, const char *prefix, int *minor)
{
	size_t l = strlen(prefix);
	char *end;
	long v;

	if (strncmp(name, prefix, l) != 0 || !isdigit((unsigned char)name[l]))
		return -EINVAL;
	v = strtol(name + l, &end, 10);
	if (v < 0 || v > 99)
		return -EINVAL;
	*minor = (int)v;
	return 0;
}

static int emit_py(struct cw_fileset *s, struct cw_python_install *py, cw_python_fn fn, void *ctx, int *count)
{
	struct stat st;

	if (stat(py->path, &st) != 0 || !S_ISREG(st.st_mode) || !cw_fileset_add(s, st.st_dev, st.st_ino))
		return 0;
	py->dev = st.st_dev;
	py->ino = st.st_ino;
	py->exports_runtime = exports_runtime(py->path);
	(*count)++;
	return fn ? fn(ctx, py) : 0;
}

static int find_pyenv(const char *root, const char *home, struct cw_fileset *s, struct cw_python_install *py,
		      cw_python_fn fn, void *ctx, int *count)
{
	const char *env = getenv("PYENV_ROOT");
	char pat[PATH_MAX];
	glob_t g;
	size_t i;
	int rc = 0;

	if (env && *env == '/')
		snprintf(pat, sizeof(pat), "%s%s/versions/*/lib/libpython3.*.so.1.0", rootp(root), env);
	else
		snprintf(pat, sizeof(pat), "%s%s/.pyenv/versions/*/lib/libpython3.*.so.1.0", rootp(root), home);
	if (glob(pat, 0, NULL, &g) != 0)
		return 0;
	for (i = 0; i < g.gl_pathc && !rc; i++) {
		const char *lib = g.gl_pathv[i], *base = strrchr(lib, '/') + 1;
		const char *ver;
		char dir[PATH_MAX - 32];

		memset(py, 0, sizeof(*py));
		py->major = 3;
		if (parse_minor(base, "libpython3.", &py->minor))
			continue;
		snprintf(py->path, sizeof(py->path), "%s", lib);
		/* .../versions/3.12.1/lib/libpython3.12.so.1.0: the directory
		 * two up names the full version. */
		snprintf(dir, sizeof(dir), "%.*s", (int)(base - lib - 5), lib);
		ver = strrchr(dir, '/');
		snprintf(py->version, sizeof(py->version), "%s", ver ? ver + 1 : "");
		if (strncmp(py->version, "3.", 2) != 0)
			snprintf(py->version, sizeof(py->version), "3.%d", py->minor);
		snprintf(py->exe, sizeof(py->exe), "%s/bin/python3.%d", dir, py->minor);
		if (access(py->exe, X_OK) != 0)
			py->exe[0] = '\0';
		py->shared = 1;
		rc = emit_py(s, py, fn, ctx, count);
	}
	globfree(&g);
	return rc;
}

static int find_system(const char *root, struct cw_fileset *s, struct cw_python_install *py, cw_python_fn fn,
		       void *ctx, int *count)
{
	static const char *const bins[] = { "/usr/bin", "/usr/local/bin", NULL };
	const char *const *b;
	int rc = 0;

	for (b = bins; *b && !rc; b++) {
		char pat[PATH_MAX];
		glob_t g;
		size_t i;

		snprintf(pat, sizeof(pat), "%s%s/python3.*", rootp(root), *b);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (i = 0; i < g.gl_pathc && !rc; i++) {
			const char *exe = g.gl_pathv[i], *base = strrchr(exe, '/') + 1;
			const char *const *d;
			char *end;

			memset(py, 0, sizeof(*py));
			py->major = 3;
			/* python3.11 only: not python3.11-config, python3.11d. */
			if (parse_minor(base, "python3.", &py->minor))
				continue;
			strtol(base + 8, &end, 10);
			if (*end)
				continue;
			snprintf(py->version, sizeof(py->version), "3.%d", py->minor);
			snprintf(py->exe, sizeof(py->exe), "%s", exe);
			if (exports_runtime(exe)) {
				/* Debian's python3.X: libpython linked in statically. */
				snprintf(py->path, sizeof(py->path), "%s", exe);
				py->shared = 0;
			} else {
				/* A shared build: its libpython is a system library. */
				for (d = system_dirs; *d; d++) {
					snprintf(py->path, sizeof(py->path), "%s%s/libpython3.%d.so.1.0", rootp(root), *d,
						 py->minor);
					if (access(py->path, R_OK) == 0)
						break;
				}
				if (!*d)
					snprintf(py->path, sizeof(py->path), "%s", exe);
				py->shared = *d != NULL;
			}
			rc = emit_py(s, py, fn, ctx, count);
		}
		globfree(&g);
	}
	return rc;
}

int cw_libfind_python(const char *root, const char *home, cw_python_fn fn, void *ctx)
{
	struct cw_fileset *s = calloc(1, sizeof(*s));
	struct cw_python_install *py = calloc(1, sizeof(*py));
	int count = 0, rc = -ENOMEM;

	if (s && py) {
		rc = find_pyenv(root, home_dir(home), s, py, fn, ctx, &count);
		if (!rc)
			rc = find_system(root, s, py, fn, ctx, &count);
	}
	free(s);
	free(py);
	return rc ? rc : count;
}
