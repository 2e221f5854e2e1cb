#include "util/fileset.h"

int cw_fileset_has(const struct cw_fileset *s, uint64_t dev, uint64_t ino)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->f[i].dev == dev && s->f[i].ino == ino)
			return 1;
	return 0;
}

int cw_fileset_add(struct cw_fileset *s, uint64_t dev, uint64_t ino)
{
	if (cw_fileset_has(s, dev, ino))
		return 0;
	if (s->n < CW_FILESET_MAX) {
		s->f[s->n].dev = dev;
		s->f[s->n].ino = ino;
		s->n++;
	}
	return 1;
}
