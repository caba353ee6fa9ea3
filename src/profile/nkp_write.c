/* SPDX-License-Identifier: BSD-3-Clause
 * Profile records out (src/profile/nkp.h).  Async-signal-safe by design:
 * write(2) (through the OS layer's nk__os_write_all) and nothing else, so the
 * profiler runtime can close a part file from a fatal-signal handler.
 */
#include <errno.h>
#include <string.h>

#include "os/os.h"
#include "profile/nkp.h"

/* Write all of @p buf.  0 or -errno: the writer's contract (nkp.h) hands the errno on. */
static int write_all(int fd, const void *buf, size_t len)
{
	int e;
	return nk__os_write_all(fd, buf, len, &e) ? -e : 0;
}

int nk__nkp_writer_init(struct nk__nkp_writer *w, int fd)
{
	if (!w || fd < 0)
		return -EINVAL;
	struct nk__nkp_file_header h;
	memcpy(h.magic, NK__NKP_MAGIC, sizeof h.magic);
	h.version = NK__NKP_VERSION;
	h.header_size = sizeof h;
	int rc = write_all(fd, &h, sizeof h);
	if (rc)
		return rc;
	w->fd = fd;
	w->records = 0;
	w->bytes = sizeof h;
	return 0;
}

int nk__nkp_write2(struct nk__nkp_writer *w, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	if (!w || w->fd < 0 || (alen && !a) || (blen && !b))
		return -EINVAL;
	if (alen > NK__NKP_MAX_PAYLOAD || blen > NK__NKP_MAX_PAYLOAD - alen)
		return -E2BIG;
	struct nk__nkp_record_header h = { .type = type, .flags = 0, .length = alen + blen };
	int rc = write_all(w->fd, &h, sizeof h);
	if (!rc && alen)
		rc = write_all(w->fd, a, alen);
	if (!rc && blen)
		rc = write_all(w->fd, b, blen);
	if (rc)
		return rc;
	w->records++;
	w->bytes += sizeof h + alen + blen;
	return 0;
}

int nk__nkp_write(struct nk__nkp_writer *w, uint32_t type, const void *payload, size_t len)
{
	return nk__nkp_write2(w, type, payload, len, NULL, 0);
}
