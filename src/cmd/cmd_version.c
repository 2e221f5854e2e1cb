/* causeway version: what this binary is and what it runs with. The library
 * versions are the ones loaded at run time (a distribution upgrade of
 * SQLite or libbpf shows here without a rebuild), not the headers'. */
#include <bpf/libbpf.h>
#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <microhttpd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <yaml.h>

#include "cmd/cmd.h"
#include "cmd/opt_error.h"
#include "util/log.h"

#ifndef CW_VERSION
#define CW_VERSION "unknown"
#endif
#ifndef CW_COMMIT
#define CW_COMMIT "unknown"
#endif

static void usage(FILE *f)
{
	fputs("usage: causeway version [--json]\n"
	      "\n"
	      "Prints causeway's version, the commit and date it was built from, the\n"
	      "versions of the libraries it runs with (libbpf, SQLite, jansson,\n"
	      "libmicrohttpd, GnuTLS, libcurl, libyaml) and the running kernel.\n"
	      "\n"
	      "  --json   one JSON object\n"
	      "  --help   this text\n"
	      "\n"
	      "examples:\n"
	      "  causeway version\n"
	      "  causeway version --json\n",
	      f);
}

/* The build date, RFC 3339 style. CW_BUILD_DATE (set by a packager from
 * SOURCE_DATE_EPOCH for reproducible builds) wins over the compiler's
 * __DATE__/__TIME__ ("Mmm dd yyyy", the build host's local time, so no
 * zone suffix is claimed). */
static void build_date(char *buf, size_t len)
{
#ifdef CW_BUILD_DATE
	snprintf(buf, len, "%s", CW_BUILD_DATE);
#else
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	const char *d = __DATE__, *m = strstr(months, (char[4]){ d[0], d[1], d[2], 0 });

	snprintf(buf, len, "%.4s-%02d-%02dT%s", d + 7, m ? (int)(m - months) / 3 + 1 : 0,
		 (int)strtol(d + 4, NULL, 10), __TIME__);
#endif
}

static json_t *versions(void)
{
	char bpf[32], date[40];
	struct utsname u;
	curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	const char *gnutls = gnutls_check_version(NULL);

	snprintf(bpf, sizeof(bpf), "%u.%u", libbpf_major_version(), libbpf_minor_version());
	build_date(date, sizeof(date));
	if (uname(&u) != 0)
		memset(&u, 0, sizeof(u));
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:{s:s, s:s, s:s}}",
			 "version", CW_VERSION, "commit", CW_COMMIT, "build_date", date,
			 "libraries",
			 "libbpf", bpf,
			 "sqlite", sqlite3_libversion(),
			 "jansson", jansson_version_str(),
			 "libmicrohttpd", MHD_get_version() ? MHD_get_version() : "unknown",
			 "gnutls", gnutls ? gnutls : "unknown",
			 "libcurl", cv && cv->version ? cv->version : "unknown",
			 "libyaml", yaml_get_version_string(),
			 "kernel",
			 "sysname", u.sysname, "release", u.release, "machine", u.machine);
}

int cmd_version(int argc, char **argv)
{
	json_t *v, *libs;
	const char *k;
	json_t *val;
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int json = 0, i, c;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = 1;
	optind = 1;
	opterr = 0;
	while ((c = cw_getopt(argc, argv, ":", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CW_EXIT_OK;
		}
		if (c != 'j')
			return cw_opt_error(json, "version", c, argv);
	}
	if (optind < argc)
		return cw_opt_unexpected(json, "version", argv[optind]);
	v = versions();
	if (!v) {
		cw_report_error(json, "version: out of memory");
		return CW_EXIT_FAIL;
	}
	if (json) {
		json_dumpf(v, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(v);
		return CW_EXIT_OK;
	}
	printf("causeway %s (commit %s, built %s)\n", CW_VERSION, CW_COMMIT,
	       json_string_value(json_object_get(v, "build_date")));
	libs = json_object_get(v, "libraries");
	json_object_foreach(libs, k, val)
		printf("  %-14s %s\n", k, json_string_value(val));
	val = json_object_get(v, "kernel");
	printf("  %-14s %s %s %s\n", "kernel", json_string_value(json_object_get(val, "sysname")),
	       json_string_value(json_object_get(val, "release")), json_string_value(json_object_get(val, "machine")));
	json_decref(v);
	return CW_EXIT_OK;
}
