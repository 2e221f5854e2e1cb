#include "symbol/demangle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Itanium C++ ABI, provided by libstdc++ (declared in <cxxabi.h>, which
 * is C++ only). */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

int cw_demangle(const char *name, char *buf, size_t len)
{
	char *d;
	int status = -1;

	if (!len)
		return 0;
	if (strncmp(name, "_Z", 2) != 0 || strlen(name) > 4096) {
		snprintf(buf, len, "%s", name);
		return 0;
	}
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		snprintf(buf, len, "%s", name);
		return 0;
	}
	snprintf(buf, len, "%s", d);
	free(d);
	return 1;
}
