/* Fuzzes the kubelet pod list parser (src/tenant/kubelet.c): the body of
 * GET tenants.kubelet_url is whatever answers at that address. Every kept
 * pod must satisfy the rules the parser promises (a UID of 32-36 hex
 * characters and dashes, a DNS-1123 name and namespace, sorted and unique
 * by UID, at most CW_KUBELET_MAX_PODS). The input is an exact-size heap
 * copy, so a read past the end is caught. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tenant/kubelet.h"
#include "tenant/tenant.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cw_kubelet_pod *v = NULL;
	char *copy = malloc(size ? size : 1);
	int n = 0, skipped = 0, rc;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	rc = cw_kubelet_parse(copy, size, &v, &n, &skipped);
	if (rc >= 0) {
		if (rc != n || n > CW_KUBELET_MAX_PODS || skipped < 0)
			__builtin_trap();
		for (int i = 0; i < n; i++) {
			size_t ul = strlen(v[i].uid);

			if (ul < 32 || ul > 36 || strspn(v[i].uid, "0123456789abcdef-") != ul ||
			    !cw_k8s_name_valid(v[i].name, strlen(v[i].name), 0) ||
			    !cw_k8s_name_valid(v[i].ns, strlen(v[i].ns), 1) ||
			    (i && strcmp(v[i - 1].uid, v[i].uid) >= 0))
				__builtin_trap();
		}
	} else if (v) {
		__builtin_trap();
	}
	free(v);
	free(copy);
	return 0;
}
