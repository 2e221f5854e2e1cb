/* The dashboard's files, embedded at build time by scripts/embed-web.sh. */
#ifndef CW_SERVER_WEB_ASSETS_H
#define CW_SERVER_WEB_ASSETS_H

#include <stddef.h>

struct cw_web_asset {
	const char *path; /* "/index.html" */
	const unsigned char *data;
	size_t len;
	const char *content_type;
};

/* Terminated by an entry whose path is NULL. */
extern const struct cw_web_asset cw_web_assets[];

#endif
