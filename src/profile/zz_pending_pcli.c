/*
 * TEMPORARY placeholders so that the pcli branch builds and its tests run
 * before the merger (nkp_merge.c) and the hw sampler (hw.c) are merged.
 * DROP THIS FILE AT MERGE.
 *
 * The merge placeholder writes a structurally valid merged file (header,
 * RUN, MACHINE, each part's records copied verbatim, TRAILER) without the
 * validation, END synthesis, sorting and hw-sample rebasing of the real one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/hw.h"
#include "profile/nkp.h"
#include "util/list.h"

int nk__nkp_merge(const char *const *parts, size_t n_parts, const char *run_json, const char *machine_json,
		  const struct nk__nkp_sample *extra, const uint32_t *extra_pid, size_t n_extra,
		  const char *out_path, char **warn, nk_error *err)
{
	struct nk__nkp_writer w;
	struct nk__nkp_trailer t = { 0 };
	int fd, rc = 0;

	(void)extra;
	(void)extra_pid;
	if (warn)
		*warn = NULL;
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return nk__error(err, NK_EIO, "%s: %s", out_path, strerror(errno));
	rc = nk__nkp_writer_init(&w, fd);
	if (!rc)
		rc = nk__nkp_write(&w, NK__NKP_RUN, run_json, strlen(run_json));
	if (!rc && machine_json)
		rc = nk__nkp_write(&w, NK__NKP_MACHINE, machine_json, strlen(machine_json));
	for (size_t i = 0; !rc && i < n_parts; i++) {
		int in = open(parts[i], O_RDONLY | O_CLOEXEC);
		struct nk__nkp_record_header h;
		char *buf;

		if (in < 0)
			continue;
		if (lseek(in, sizeof(struct nk__nkp_file_header), SEEK_SET) < 0) {
			close(in);
			continue;
		}
		t.processes++;
		while (!rc && read(in, &h, sizeof h) == (ssize_t)sizeof h && h.length <= NK__NKP_MAX_PAYLOAD) {
			buf = malloc(h.length ? h.length : 1);
			if (!buf || read(in, buf, h.length) != (ssize_t)h.length) {
				free(buf);
				break;
			}
			if (h.type == NK__NKP_SAMPLES)
				t.samples += h.length / sizeof(struct nk__nkp_sample);
			rc = nk__nkp_write(&w, h.type, buf, h.length);
			free(buf);
		}
		close(in);
	}
	t.samples += n_extra;
	t.records = w.records;
	if (!rc)
		rc = nk__nkp_write(&w, NK__NKP_TRAILER, &t, sizeof t);
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		return nk__error(err, NK_EIO, "%s: %s", out_path, strerror(-rc));
	return 0;
}

struct nk__hw {
	int unused;
};

int nk__hw_open(int pid, const nk_machine *m, double rate, struct nk__hw **out, nk_error *err)
{
	(void)pid;
	(void)m;
	(void)rate;
	(void)out;
	return nk__error(err, NK_ENOSYS, "placeholder");
}

const char *nk__hw_describe(const struct nk__hw *h)
{
	(void)h;
	return "placeholder";
}

int nk__hw_drain(struct nk__hw *h, struct nk__hw_samples *out, nk_error *err)
{
	(void)h;
	(void)out;
	(void)err;
	return 0;
}

void nk__hw_close(struct nk__hw *h)
{
	(void)h;
}

void nk__hw_samples_free(struct nk__hw_samples *out)
{
	if (!out)
		return;
	free(out->s);
	free(out->pid);
	out->s = NULL;
	out->pid = NULL;
	out->n = out->cap = 0;
}
