/*
 * The release build (make release, scripts/release.mk) links the
 * distribution's static archives into one file. Three of the libraries
 * those archives reference have no static archive in Debian 12: p11-kit
 * (from GnuTLS: PKCS#11 tokens), the Kerberos GSS-API (from libcurl:
 * Negotiate/SPNEGO authentication) and Cyrus SASL (from libcurl's LDAP
 * through libldap). causeway uses none of them: keys and certificates are
 * PEM files, its HTTP clients allow only http and https (no LDAP) and never
 * ask for Negotiate. These definitions stand in for them and fail every
 * call the way each library reports "not available", so a PKCS#11 URI, a
 * Negotiate challenge or an LDAP URL is an error, never undefined
 * behaviour. The ordinary build links the real shared libraries and
 * compiles this file to nothing.
 */
#ifdef CW_RELEASE_STATIC

#include <stddef.h>

static const char cw_no_p11[] = "PKCS#11 is not part of causeway's release build";

/* p11-kit 0.24 (p11-kit/p11-kit.h, uri.h, pin.h). */
#define P11_KIT_URI_NOT_FOUND (-6)
const char *p11_kit_message(void) { return cw_no_p11; }
const char *p11_kit_strerror(unsigned long rv) { return cw_no_p11; }
char *p11_kit_config_option(void *module, const char *option) { return NULL; }
void **p11_kit_modules_load(const char *reserved, int flags) { return NULL; }
void *p11_kit_module_load(const char *path, int flags) { return NULL; }
unsigned long p11_kit_module_finalize(void *module) { return 5; /* CKR_GENERAL_ERROR */ }
void p11_kit_module_release(void *module) { }
int p11_kit_module_get_flags(void *module) { return 0; }
char *p11_kit_module_get_name(void *module) { return NULL; }
size_t p11_kit_space_strlen(const unsigned char *s, size_t max) { return 0; }
char *p11_kit_space_strdup(const unsigned char *s, size_t max) { return NULL; }
void *p11_kit_uri_new(void) { return NULL; }
void p11_kit_uri_free(void *uri) { }
int p11_kit_uri_parse(const char *s, int what, void *uri) { return P11_KIT_URI_NOT_FOUND; }
int p11_kit_uri_format(void *uri, int what, char **out) { return P11_KIT_URI_NOT_FOUND; }
void *p11_kit_uri_get_attribute(void *uri, unsigned long type) { return NULL; }
void *p11_kit_uri_get_attributes(void *uri, unsigned long *n) { if (n) *n = 0; return NULL; }
int p11_kit_uri_set_attribute(void *uri, void *attr) { return P11_KIT_URI_NOT_FOUND; }
void *p11_kit_uri_get_module_info(void *uri) { return NULL; }
void *p11_kit_uri_get_token_info(void *uri) { return NULL; }
const char *p11_kit_uri_get_pin_source(void *uri) { return NULL; }
const char *p11_kit_uri_get_pin_value(void *uri) { return NULL; }
int p11_kit_uri_match_module_info(void *uri, void *info) { return 0; }
int p11_kit_uri_match_token_info(void *uri, void *info) { return 0; }
void *p11_kit_pin_new_for_string(const char *s) { return NULL; }
void *p11_kit_pin_request(const char *src, void *uri, const char *label, unsigned flags) { return NULL; }
const unsigned char *p11_kit_pin_get_value(void *pin, size_t *len) { if (len) *len = 0; return NULL; }
size_t p11_kit_pin_get_length(void *pin) { return 0; }
void p11_kit_pin_unref(void *pin) { }
int p11_kit_pin_register_callback(const char *src, void *cb, void *data, void *destroy) { return -1; }
void p11_kit_pin_unregister_callback(const char *src, void *cb, void *data) { }
void *p11_kit_pin_file_callback(const char *src, void *uri, const char *label, unsigned flags, void *data)
{
	return NULL;
}

/* GSS-API (RFC 2744): every call fails with GSS_S_FAILURE, minor 0. */
#define CW_GSS_S_FAILURE (13u << 16)
void *GSS_C_NT_HOSTBASED_SERVICE = NULL;
#define CW_GSS_FAIL(name)                                                                                    \
	unsigned name(unsigned *minor)                                                                      \
	{                                                                                                    \
		if (minor)                                                                                   \
			*minor = 0;                                                                          \
		return CW_GSS_S_FAILURE;                                                                     \
	}
CW_GSS_FAIL(gss_import_name)
CW_GSS_FAIL(gss_init_sec_context)
CW_GSS_FAIL(gss_delete_sec_context)
CW_GSS_FAIL(gss_display_name)
CW_GSS_FAIL(gss_display_status)
CW_GSS_FAIL(gss_inquire_context)
CW_GSS_FAIL(gss_release_buffer)
CW_GSS_FAIL(gss_release_name)
CW_GSS_FAIL(gss_wrap)
CW_GSS_FAIL(gss_unwrap)

/* Cyrus SASL 2.1: SASL_FAIL (-1) for every call. */
#define CW_SASL_FAIL (-1)
int sasl_client_init(const void *callbacks) { return CW_SASL_FAIL; }
int sasl_client_new(void) { return CW_SASL_FAIL; }
int sasl_client_start(void) { return CW_SASL_FAIL; }
int sasl_client_step(void) { return CW_SASL_FAIL; }
int sasl_encode(void) { return CW_SASL_FAIL; }
int sasl_decode(void) { return CW_SASL_FAIL; }
int sasl_getprop(void) { return CW_SASL_FAIL; }
int sasl_setprop(void) { return CW_SASL_FAIL; }
void sasl_dispose(void **conn) { }
void sasl_set_mutex(void *a, void *l, void *u, void *f) { }
const char **sasl_global_listmech(void) { return NULL; }
const char *sasl_errstring(int code, const char *langs, const char **out)
{
	return "SASL is not part of causeway's release build";
}
const char *sasl_errdetail(void *conn) { return "SASL is not part of causeway's release build"; }

#endif /* CW_RELEASE_STATIC */
