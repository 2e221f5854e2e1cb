/* The kubelet's pod list (kubelet.h). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/kubelet.h"
#include "tenant/tenant.h"
#include "util/strbuf.h"

/* A pod UID as the API server writes it (RFC 4122, lower-case), or a
 * static pod's 32-hex config hash. */
static int uid_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n < 32 || n > 36)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '-' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static int cmp_uid(const void *a, const void *b)
{
	return strcmp(((const struct cw_kubelet_pod *)a)->uid, ((const struct cw_kubelet_pod *)b)->uid);
}

int cw_kubelet_parse(const char *body, size_t len, struct cw_kubelet_pod **out, int *n, int *skipped)
{
	struct cw_kubelet_pod *v = NULL;
	json_error_t jerr;
	json_t *root, *items, *it;
	size_t i;
	int k = 0, bad = 0, w = 0;

	*out = NULL;
	*n = 0;
	*skipped = 0;
	/* Depth and size are bounded by jansson (JSON_PARSER_MAX_DEPTH) and by
	 * the body cap; duplicates would make "which name" ambiguous. NUL
	 * bytes are let through the parser so that one odd item is refused
	 * alone (below) rather than the whole list. */
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	items = json_object_get(root, "items");
	if (!json_is_array(items)) {
		json_decref(root);
		return -EINVAL;
	}
	v = calloc(json_array_size(items) < CW_KUBELET_MAX_PODS ? json_array_size(items) + 1 : CW_KUBELET_MAX_PODS,
		   sizeof(*v));
	if (!v) {
		json_decref(root);
		return -ENOMEM;
	}
	json_array_foreach(items, i, it) {
		json_t *md = json_object_get(it, "metadata");
		const char *uid = json_string_value(json_object_get(md, "uid"));
		const char *name = json_string_value(json_object_get(md, "name"));
		const char *ns = json_string_value(json_object_get(md, "namespace"));

		/* json_string_value strings may hold NUL bytes: the length
		 * checks below see only up to the first, and the name rules
		 * refuse what is left (strlen != the JSON length is refused). */
		if (!uid_valid(uid) || !name || !ns || strlen(name) != json_string_length(json_object_get(md, "name")) ||
		    strlen(ns) != json_string_length(json_object_get(md, "namespace")) ||
		    !cw_k8s_name_valid(name, strlen(name), 0) || !cw_k8s_name_valid(ns, strlen(ns), 1) ||
		    k == CW_KUBELET_MAX_PODS) {
			bad++;
			continue;
		}
		snprintf(v[k].uid, sizeof(v[k].uid), "%s", uid);
		snprintf(v[k].name, sizeof(v[k].name), "%s", name);
		snprintf(v[k].ns, sizeof(v[k].ns), "%s", ns);
		k++;
	}
	json_decref(root);
	qsort(v, (size_t)k, sizeof(*v), cmp_uid);
	/* A UID listed twice names nothing for sure: both are dropped. */
	for (int r = 0; r < k;) {
		int e = r + 1;

		while (e < k && !strcmp(v[e].uid, v[r].uid))
			e++;
		if (e - r == 1)
			v[w++] = v[r];
		else
			bad += e - r;
		r = e;
	}
	*out = v;
	*n = w;
	*skipped = bad;
	return w;
}

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
	/* Returning less than given aborts the transfer: the cap holds as
	 * bytes arrive, whatever Content-Length said. */
	return strbuf_add(arg, p, sz * nm) ? 0 : sz * nm;
}

int cw_kubelet_get(const char *url, long timeout_ms, char **body, size_t *len, char *err, size_t errlen)
{
	char cerr[CURL_ERROR_SIZE] = "";
	struct strbuf sb;
	long status = 0;
	CURLcode cc;
	CURL *h;
	int rc = 0;

	*body = NULL;
	*len = 0;
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		snprintf(err, errlen, "kubelet url \"%.100s\" is not http:// or https://", url);
		return -EINVAL;
	}
	if (!(h = curl_easy_init())) {
		snprintf(err, errlen, "kubelet: out of memory");
		return -ENOMEM;
	}
	strbuf_init(&sb, CW_KUBELET_MAX_BODY);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sb);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CW_KUBELET_MAX_BODY);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (sb.overflow || cc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(err, errlen, "kubelet pod list from \"%.100s\" is larger than %u bytes", url,
			 CW_KUBELET_MAX_BODY);
		rc = -EFBIG;
	} else if (cc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(err, errlen, "kubelet \"%.100s\" did not answer within %ld ms", url, timeout_ms);
		rc = -ETIMEDOUT;
	} else if (cc != CURLE_OK) {
		snprintf(err, errlen, "kubelet \"%.100s\": %s", url, cerr[0] ? cerr : curl_easy_strerror(cc));
		rc = -EIO;
	} else if (status != 200) {
		snprintf(err, errlen, "kubelet \"%.100s\" answered status %ld", url, status);
		rc = -EPROTO;
	}
	if (rc) {
		strbuf_release(&sb);
		return rc;
	}
	*len = sb.len;
	*body = strbuf_detach(&sb);
	if (!*body) {
		snprintf(err, errlen, "kubelet: out of memory");
		return -ENOMEM;
	}
	return 0;
}

int cw_kubelet_init(struct cw_kubelet *k, const char *url)
{
	memset(k, 0, sizeof(*k));
	if (!(k->url = strdup(url)))
		return -ENOMEM;
	return 0;
}

void cw_kubelet_free(struct cw_kubelet *k)
{
	free(k->url);
	free(k->pods);
	memset(k, 0, sizeof(*k));
}

/* Fetches and parses the list now; on failure the previous list stays.
 * Returns 0 or -errno (k->last_error says why). */
static int cw_kubelet_refresh(struct cw_kubelet *k, uint64_t now_ns)
{
	struct cw_kubelet_pod *v;
	char *body;
	size_t len;
	int rc, n, skipped;

	k->tried_ns = now_ns ? now_ns : 1;
	k->fetches++;
	rc = cw_kubelet_get(k->url, CW_KUBELET_TIMEOUT_MS, &body, &len, k->last_error, sizeof(k->last_error));
	if (!rc) {
		rc = cw_kubelet_parse(body, len, &v, &n, &skipped);
		free(body);
		if (rc == -EINVAL)
			snprintf(k->last_error, sizeof(k->last_error), "kubelet \"%.100s\" sent no pod list", k->url);
	}
	if (rc < 0) {
		k->errors++;
		return rc;
	}
	free(k->pods);
	k->pods = v;
	k->npods = n;
	k->skipped = skipped;
	k->fetched_ns = k->tried_ns;
	k->last_error[0] = 0;
	return 0;
}

static const struct cw_kubelet_pod *find(const struct cw_kubelet *k, const char *uid)
{
	struct cw_kubelet_pod key;

	if (!k->npods)
		return NULL;
	snprintf(key.uid, sizeof(key.uid), "%s", uid);
	return bsearch(&key, k->pods, (size_t)k->npods, sizeof(key), cmp_uid);
}

const struct cw_kubelet_pod *cw_kubelet_lookup(struct cw_kubelet *k, const char *uid, uint64_t now_ns)
{
	const struct cw_kubelet_pod *p;

	if (!uid_valid(uid))
		return NULL;
	if (!k->fetched_ns || now_ns - k->fetched_ns > CW_KUBELET_MAX_AGE_NS) {
		if (!k->tried_ns || now_ns - k->tried_ns > CW_KUBELET_MISS_EVERY_NS)
			cw_kubelet_refresh(k, now_ns);
	}
	if ((p = find(k, uid)))
		return p;
	if (now_ns - k->tried_ns > CW_KUBELET_MISS_EVERY_NS)
		cw_kubelet_refresh(k, now_ns);
	return find(k, uid);
}
