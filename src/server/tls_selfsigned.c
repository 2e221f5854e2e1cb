/* A self-signed server certificate for agents started without one, so the
 * API is never plain HTTP by accident. Generated once and kept: clients pin
 * it (fan-out --ca-cert points at server.crt) and it must survive restarts. */
#define _GNU_SOURCE
#include "server/server.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

static int mkdirs(const char *dir)
{
	char tmp[4096], *p;

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Writes via a temporary file and rename, so a crash never leaves a half
 * certificate that the next start would fail to load. */
static int write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[4200];
	ssize_t w;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode))
		rc = -errno;
	while (!rc && len) {
		w = write(fd, data, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		data = (const char *)data + w;
		len -= (size_t)w;
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static int usable(const char *cert, const char *key)
{
	gnutls_certificate_credentials_t cred;
	int ok;

	if (access(cert, R_OK) || access(key, R_OK))
		return 0;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return 0;
	ok = gnutls_certificate_set_x509_key_file(cred, cert, key, GNUTLS_X509_FMT_PEM) >= 0;
	gnutls_certificate_free_credentials(cred);
	return ok;
}

static int generate(const char *node, gnutls_datum_t *cert_pem, gnutls_datum_t *key_pem)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	unsigned char serial[16];
	char cn[128], host[256];
	time_t now = time(NULL);
	int rc;

	if ((rc = gnutls_x509_privkey_init(&key)) < 0 || (rc = gnutls_x509_crt_init(&crt)) < 0)
		goto out;
	rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					  GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	if (rc < 0)
		goto out;
	if ((rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
		goto out;
	serial[0] &= 0x7f; /* a positive integer, as RFC 5280 requires */
	snprintf(cn, sizeof(cn), "causeway %s", node);
	if ((rc = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
	    (rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
	    (rc = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
	    (rc = gnutls_x509_crt_set_expiration_time(crt, now + 10L * 365 * 86400)) < 0 ||
	    (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
						strlen(cn))) < 0 ||
	    (rc = gnutls_x509_crt_set_key(crt, key)) < 0 ||
	    (rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
	    (rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
	    (rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0)
		goto out;
	/* Names a fan-out client may use to reach this agent. */
	if ((rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "localhost", 9,
						       GNUTLS_FSAN_APPEND)) < 0 ||
	    (rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, node,
						       (unsigned)strlen(node),
						       GNUTLS_FSAN_APPEND)) < 0 ||
	    (rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS,
						       "\x7f\x00\x00\x01", 4,
						       GNUTLS_FSAN_APPEND)) < 0 ||
	    (rc = gnutls_x509_crt_set_subject_alt_name(
		     crt, GNUTLS_SAN_IPADDRESS,
		     "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01", 16,
		     GNUTLS_FSAN_APPEND)) < 0)
		goto out;
	if (!gethostname(host, sizeof(host) - 1) && host[0] && strcmp(host, node)) {
		host[sizeof(host) - 1] = 0;
		if ((rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host,
							       (unsigned)strlen(host),
							       GNUTLS_FSAN_APPEND)) < 0)
			goto out;
	}
	if ((rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
		goto out;
	if ((rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, cert_pem)) < 0)
		goto out;
	rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, key_pem);
	if (rc < 0) {
		gnutls_free(cert_pem->data);
		cert_pem->data = NULL;
	}
out:
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	return rc < 0 ? -EIO : 0;
}

int cw_tls_selfsigned(const char *dir, const char *node, char **cert_path, char **key_path,
		      char *err, size_t errlen)
{
	gnutls_datum_t c = { 0 }, k = { 0 };
	char *cp = NULL, *kp = NULL;
	int rc, lockfd = -1;

	if (!dir) {
		snprintf(err, errlen, "no directory for the generated certificate");
		return -EINVAL;
	}
	if (asprintf(&cp, "%s/server.crt", dir) < 0 || asprintf(&kp, "%s/server.key", dir) < 0) {
		free(cp);
		return -ENOMEM;
	}
	if (usable(cp, kp))
		goto done;
	if ((rc = mkdirs(dir))) {
		snprintf(err, errlen, "cannot create \"%s\": %s", dir, strerror(-rc));
		goto fail;
	}
	/* Agents started together on one host must not each write half a
	 * pair: the first generates under the lock, the others reuse it. */
	{
		char lp[4200];

		snprintf(lp, sizeof(lp), "%s/.lock", dir);
		lockfd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lockfd >= 0)
			flock(lockfd, LOCK_EX);
		if (usable(cp, kp))
			goto done;
	}
	if ((rc = generate(node, &c, &k))) {
		snprintf(err, errlen, "cannot generate a TLS certificate");
		goto fail;
	}
	/* The key first and 0600: the pair is only usable once both exist. */
	rc = write_file(kp, k.data, k.size, 0600);
	if (!rc)
		rc = write_file(cp, c.data, c.size, 0644);
	explicit_bzero(k.data, k.size);
	gnutls_free(k.data);
	gnutls_free(c.data);
	if (rc) {
		snprintf(err, errlen, "cannot write the TLS certificate into \"%s\": %s", dir,
			 strerror(-rc));
		goto fail;
	}
done:
	if (lockfd >= 0)
		close(lockfd);
	*cert_path = cp;
	*key_path = kp;
	return 0;
fail:
	if (lockfd >= 0)
		close(lockfd);
	free(cp);
	free(kp);
	return rc;
}
