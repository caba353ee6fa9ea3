/* SPDX-License-Identifier: BSD-3-Clause
 * The profile file (src/profile/nkp.h): files written through the writer
 * read back by nk__nkp_parse, every rejection with its message, a valid
 * merged file cut at every byte, and the part merger (normal parts, parts
 * cut mid-record or without END, extra samples rebased and split, processes
 * sorted), its output always read back by the reader.
 */
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "profile/nkp.h"
#include "profile/nkp_impl.h"

/* ------------------------------------------------------------ building files */

struct fb {
	int fd;
	struct nk__nkp_writer w;
	uint64_t samples, procs;
};

static void fb_init(struct fb *f)
{
	memset(f, 0, sizeof *f);
	f->fd = memfd_create("nkp", 0);
	assert_true(f->fd >= 0);
	assert_int_equal(nk__nkp_writer_init(&f->w, f->fd), 0);
}

static void fb_rec(struct fb *f, uint32_t type, const void *p, size_t len)
{
	assert_int_equal(nk__nkp_write(&f->w, type, p, len), 0);
	if (type == NK__NKP_SAMPLES)
		f->samples += len / sizeof(struct nk__nkp_sample);
	if (type == NK__NKP_PROCESS)
		f->procs++;
}

static void fb_json(struct fb *f, uint32_t type, const char *s)
{
	fb_rec(f, type, s, strlen(s));
}

static void fb_proc(struct fb *f, uint32_t pid, uint64_t start)
{
	struct nk__nkp_process pr = { pid, 1, start };
	char meta[128];
	snprintf(meta, sizeof meta, "{\"pid\": %u, \"argv\": [\"prog\"], \"page_size\": 4096}", pid);
	fb_rec(f, NK__NKP_PROCESS, &pr, sizeof pr);
	fb_json(f, NK__NKP_META, meta);
}

static void fb_end(struct fb *f)
{
	fb_json(f, NK__NKP_END, "{\"complete\": true, \"how\": \"exit\", \"status\": 0}");
}

static void fb_trailer(struct fb *f)
{
	struct nk__nkp_trailer t = { f->w.records, f->procs, f->samples };
	fb_rec(f, NK__NKP_TRAILER, &t, sizeof t);
}

/* The bytes written, in a buffer of exactly that size (so ASan sees overreads). */
static unsigned char *fb_done(struct fb *f, size_t *len)
{
	off_t n = lseek(f->fd, 0, SEEK_END);
	assert_true(n > 0);
	unsigned char *b = malloc((size_t)n);
	assert_non_null(b);
	assert_int_equal(pread(f->fd, b, (size_t)n, 0), n);
	close(f->fd);
	*len = (size_t)n;
	return b;
}

static struct nk__nkp_sample smp(uint64_t t, uint16_t phase)
{
	struct nk__nkp_sample s = { .time_ns = t, .addr = 0x10000 + t, .ip = 0x400000, .tid = 7, .weight = 1,
				    .cpu = 1, .cpu_node = 0, .page_node = 1, .phase = phase, .access = NK__ACC_READ,
				    .sampler = NK__SAMPLER_PAGEFAULT };
	return s;
}

/* The records of one process besides PROCESS/META/END, every type once. */
static void fb_body(struct fb *f)
{
	struct nk__nkp_thread th = { 7, 0, 5, 0x7000, 0x8000, 1, 0 };
	struct { struct nk__nkp_site s; uint64_t ip[2]; } site = { { 1, 2 }, { 0x401000, 0x402000 } };
	struct nk__nkp_alloc al = { 0x10000, 1 << 20, 10, 7, 1, NK__ALLOC_MALLOC, 1 };
	struct nk__nkp_free fr = { 0x10000, 90, 7, 1 };
	struct nk__nkp_name nm = { 0x10000, 4096, 11 };
	struct nk__nkp_phase ph = { 20, 7, 1, 0 };
	struct nk__nkp_maps mp = { 1 };
	struct nk__nkp_sample s[3] = { smp(12, 0), smp(25, 1), smp(30, 1) };

	assert_int_equal(nk__nkp_write2(&f->w, NK__NKP_MAPS, &mp, sizeof mp, "00400000-00401000 r-xp 0 0:0 0 /prog\n",
					strlen("00400000-00401000 r-xp 0 0:0 0 /prog\n")), 0);
	fb_rec(f, NK__NKP_THREAD, &th, sizeof th);
	fb_rec(f, NK__NKP_SITE, &site, sizeof site);
	fb_rec(f, NK__NKP_ALLOC, &al, sizeof al);
	assert_int_equal(nk__nkp_write2(&f->w, NK__NKP_NAME, &nm, sizeof nm, "grid", 4), 0);
	assert_int_equal(nk__nkp_write2(&f->w, NK__NKP_PHASE, &ph, sizeof ph, "compute", 7), 0);
	fb_rec(f, NK__NKP_SAMPLES, s, sizeof s);
	fb_rec(f, NK__NKP_FREE, &fr, sizeof fr);
}

/* A valid merged file of two processes. */
static unsigned char *valid_file(size_t *len)
{
	struct fb f;
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{\"numakit\": \"0.1.0\", \"sampler\": \"pagefault\"}");
	fb_json(&f, NK__NKP_MACHINE, "{\"format\": \"numakit-machine\"}");
	fb_proc(&f, 100, 1000);
	fb_body(&f);
	fb_end(&f);
	fb_proc(&f, 101, 2000);
	fb_json(&f, NK__NKP_END, "{\"complete\": false, \"how\": \"killed\"}");
	fb_trailer(&f);
	return fb_done(&f, len);
}

/* ------------------------------------------------------------ expectations */

static struct nk__nkp_profile *expect_ok(const unsigned char *b, size_t len)
{
	struct nk__nkp_profile *p = NULL;
	nk_error err = { 0 };
	if (nk__nkp_parse(b, len, &p, &err))
		fail_msg("parse: %s", err.message);
	assert_non_null(p);
	return p;
}

static void expect_err(const unsigned char *b, size_t len, int code, const char *msg)
{
	struct nk__nkp_profile *sentinel = (struct nk__nkp_profile *)&sentinel, *p = sentinel;
	nk_error err = { 0 };
	int rc = nk__nkp_parse(b, len, &p, &err);
	if (rc != code)
		fail_msg("expected %d (\"%s\"), got %d (%s)", code, msg, rc, err.message);
	assert_int_equal(err.code, code);
	assert_ptr_equal(p, sentinel);
	if (!strstr(err.message, msg))
		fail_msg("message \"%s\" lacks \"%s\"", err.message, msg);
}

/* A file: RUN, one process whose body @p body writes, END, TRAILER; checked to fail with @p msg. */
static void expect_body_err(void (*body)(struct fb *), int code, const char *msg)
{
	struct fb f;
	size_t len;
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_proc(&f, 100, 1000);
	body(&f);
	fb_end(&f);
	fb_trailer(&f);
	unsigned char *b = fb_done(&f, &len);
	if (code)
		expect_err(b, len, code, msg);
	else
		nk__nkp_free(expect_ok(b, len));
	free(b);
}

/* ------------------------------------------------------------ reader */

static void test_round_trip(void **state)
{
	(void)state;
	size_t len;
	unsigned char *b = valid_file(&len);
	struct nk__nkp_profile *p = expect_ok(b, len);

	assert_int_equal(p->version, 1);
	assert_non_null(strstr(p->run_json, "pagefault"));
	assert_non_null(strstr(p->machine_json, "numakit-machine"));
	assert_int_equal(p->n_procs, 2);
	assert_int_equal(p->n_samples, 3);
	const struct nk__nkp_process_data *a = &p->procs[0], *c = &p->procs[1];
	assert_int_equal(a->info.pid, 100);
	assert_int_equal(a->info.start_ns, 1000);
	assert_non_null(strstr(a->meta_json, "\"pid\": 100"));
	assert_int_equal(a->complete, 1);
	assert_int_equal(c->complete, 0);
	assert_non_null(strstr(c->end_json, "killed"));
	assert_int_equal(a->n_maps, 1);
	assert_string_equal(a->maps, "00400000-00401000 r-xp 0 0:0 0 /prog\n");
	assert_int_equal(a->n_threads, 1);
	assert_int_equal(a->threads[0].stack_hi, 0x8000);
	assert_int_equal(a->n_sites, 1);
	assert_int_equal(a->sites[0].depth, 2);
	assert_int_equal(a->sites[0].ips[1], 0x402000);
	assert_int_equal(a->n_allocs, 1);
	assert_int_equal(a->allocs[0].size, 1 << 20);
	assert_int_equal(a->n_frees, 1);
	assert_int_equal(a->n_names, 1);
	assert_string_equal(a->names[0].name, "grid");
	assert_int_equal(a->n_phases, 1);
	assert_string_equal(a->phases[0].name, "compute");
	assert_int_equal(a->n_samples, 3);
	assert_int_equal(a->samples[1].time_ns, 25);
	assert_int_equal(a->samples[1].phase, 1);
	assert_int_equal(c->n_samples, 0);
	assert_null(c->maps);
	nk__nkp_free(p);
	nk__nkp_free(NULL);

	/* a larger file header is skipped; unknown optional records are skipped */
	struct fb f;
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_rec(&f, 99 | NK__NKP_OPTIONAL, "xyz", 3);
	fb_proc(&f, 5, 1);
	fb_rec(&f, 98 | NK__NKP_OPTIONAL, NULL, 0);
	fb_end(&f);
	fb_trailer(&f);
	free(b);
	b = fb_done(&f, &len);
	p = expect_ok(b, len);
	assert_int_equal(p->n_procs, 1);
	assert_null(p->machine_json);
	nk__nkp_free(p);
	unsigned char *big = malloc(len + 8);
	memcpy(big, b, 16);
	memset(big + 16, 0xee, 8);
	memcpy(big + 24, b + 16, len - 16);
	uint32_t hs = 24;
	memcpy(big + 12, &hs, 4);
	p = expect_ok(big, len + 8);
	nk__nkp_free(p);
	free(big);
	free(b);
}

static void test_header_errors(void **state)
{
	(void)state;
	size_t len;
	unsigned char *b = valid_file(&len);
	uint32_t v;

	b[0] = 'X';
	expect_err(b, len, NK_EPARSE, "profile: not a numakit profile");
	expect_err((const unsigned char *)"hello", 5, NK_EPARSE, "not a numakit profile");
	b[0] = 'N';
	expect_err(b, 10, NK_EPARSE, "profile: truncated");
	expect_err(b, 0, NK_EPARSE, "truncated");
	v = 7;
	memcpy(b + 8, &v, 4);
	expect_err(b, len, NK_EVERSION, "profile: profile version 7; this numakit reads versions 1 and 2");
	v = 1;
	memcpy(b + 8, &v, 4);
	v = 8;
	memcpy(b + 12, &v, 4);
	expect_err(b, len, NK_EPARSE, "file header size 8, less than 16");
	v = 1u << 30;
	memcpy(b + 12, &v, 4);
	expect_err(b, len, NK_EPARSE, "truncated: file header size");
	v = 16;
	memcpy(b + 12, &v, 4);
	/* refused before a byte is read */
	expect_err(b, ((size_t)1 << 30) + 1, NK_EPARSE, "at most 1 GiB");
	free(b);

	struct nk__nkp_profile *p = NULL;
	assert_int_equal(nk__nkp_parse(NULL, 1, &p, NULL), NK_EINVAL);
	assert_int_equal(nk__nkp_parse("x", 1, NULL, NULL), NK_EINVAL);
}

/* Patch the record header at @p off: length or type or flags. */
static void test_record_errors(void **state)
{
	(void)state;
	size_t len;
	unsigned char *b = valid_file(&len);
	struct nk__nkp_record_header h;
	size_t run = 16; /* RUN is the first record */
	char msg[128];

	memcpy(&h, b + run, sizeof h);
	h.length = len;
	memcpy(b + run, &h, sizeof h);
	expect_err(b, len, NK_EPARSE, "profile: offset 16: RUN record: truncated: length");
	h.length = (uint64_t)NK__NKP_MAX_PAYLOAD + 1;
	memcpy(b + run, &h, sizeof h);
	snprintf(msg, sizeof msg, "offset 16: RUN record: length %u, more than %u", NK__NKP_MAX_PAYLOAD + 1,
		 NK__NKP_MAX_PAYLOAD);
	expect_err(b, len, NK_EPARSE, msg);
	h.length = ~(uint64_t)0;
	memcpy(b + run, &h, sizeof h);
	expect_err(b, len, NK_EPARSE, "more than");
	free(b);

	b = valid_file(&len);
	memcpy(&h, b + run, sizeof h);
	h.type = 99;
	memcpy(b + run, &h, sizeof h);
	expect_err(b, len, NK_EVERSION, "offset 16: record type 99 unknown to this numakit");
	h.type = NK__NKP_RUN;
	h.flags = 4;
	memcpy(b + run, &h, sizeof h);
	expect_err(b, len, NK_EPARSE, "RUN record: flags 0x4");
	free(b);

	/* data after TRAILER, TRAILER missing */
	b = valid_file(&len);
	unsigned char *more = malloc(len + 3);
	memcpy(more, b, len);
	memset(more + len, 0, 3);
	expect_err(more, len + 3, NK_EPARSE, "data after TRAILER (3 bytes)");
	free(more);
	expect_err(b, len - 40, NK_EPARSE, "truncated: the file ends without a TRAILER record");
	free(b);
}

static void bad_samples_len(struct fb *f)
{
	static const unsigned char z[100];
	fb_rec(f, NK__NKP_SAMPLES, z, sizeof z);
}
static void sample_mut(struct fb *f, int which)
{
	struct nk__nkp_sample s[2] = { smp(1, 0), smp(2, 0) };
	switch (which) {
	case 0: s[1].access = 3; break;
	case 1: s[1].source = 11; break;
	case 2: s[1].sampler = 0; break;
	case 3: s[1].sampler = 5; break;
	case 4: s[1].cpu = -2; break;
	case 5: s[1].cpu_node = -2; break;
	case 6: s[1].page_node = -2; break;
	case 7: s[1].phase = 5; break;
	}
	fb_rec(f, NK__NKP_SAMPLES, s, sizeof s);
}
static void s_access(struct fb *f) { sample_mut(f, 0); }
static void s_source(struct fb *f) { sample_mut(f, 1); }
static void s_sampler0(struct fb *f) { sample_mut(f, 2); }
static void s_sampler4(struct fb *f) { sample_mut(f, 3); }
static void s_cpu(struct fb *f) { sample_mut(f, 4); }
static void s_cpunode(struct fb *f) { sample_mut(f, 5); }
static void s_pagenode(struct fb *f) { sample_mut(f, 6); }
static void s_phase(struct fb *f) { sample_mut(f, 7); }
static void s_phase_declared_later(struct fb *f)
{
	struct nk__nkp_phase ph = { 50, 7, 5, 0 };
	sample_mut(f, 7);
	assert_int_equal(nk__nkp_write2(&f->w, NK__NKP_PHASE, &ph, sizeof ph, "late", 4), 0);
}
static void bad_meta_twice(struct fb *f) { fb_json(f, NK__NKP_META, "{}"); }
static void bad_thread_size(struct fb *f)
{
	static const unsigned char z[39];
	fb_rec(f, NK__NKP_THREAD, z, sizeof z);
}
static void bad_thread_cpu(struct fb *f)
{
	struct nk__nkp_thread th = { 7, 0, 5, 0, 0, -3, 0 };
	fb_rec(f, NK__NKP_THREAD, &th, sizeof th);
}
static void bad_site_depth(struct fb *f)
{
	struct { struct nk__nkp_site s; uint64_t ip[33]; } site = { { 1, 33 }, { 0 } };
	fb_rec(f, NK__NKP_SITE, &site, sizeof site);
}
static void bad_site_len(struct fb *f)
{
	struct { struct nk__nkp_site s; uint64_t ip[1]; } site = { { 1, 2 }, { 0 } };
	fb_rec(f, NK__NKP_SITE, &site, sizeof site);
}
static void bad_site_dup(struct fb *f)
{
	struct { struct nk__nkp_site s; uint64_t ip[1]; } site = { { 3, 1 }, { 0 } };
	fb_rec(f, NK__NKP_SITE, &site, sizeof site);
	fb_rec(f, NK__NKP_SITE, &site, sizeof site);
}
static void bad_alloc_site(struct fb *f)
{
	struct nk__nkp_alloc al = { 0x10000, 4096, 10, 7, 9, NK__ALLOC_MALLOC, 1 };
	fb_rec(f, NK__NKP_ALLOC, &al, sizeof al);
}
static void bad_alloc_kind(struct fb *f)
{
	struct nk__nkp_alloc al = { 0x10000, 4096, 10, 7, 0, 8, 1 };
	fb_rec(f, NK__NKP_ALLOC, &al, sizeof al);
}
static void good_alloc_site_later(struct fb *f)
{
	struct nk__nkp_alloc al = { 0x10000, 4096, 10, 7, 4, NK__ALLOC_MALLOC, 1 };
	struct { struct nk__nkp_site s; uint64_t ip[1]; } site = { { 4, 1 }, { 0x401000 } };
	fb_rec(f, NK__NKP_ALLOC, &al, sizeof al);
	fb_rec(f, NK__NKP_SITE, &site, sizeof site);
}
static void name_rec(struct fb *f, uint32_t type, const char *name, size_t len)
{
	struct nk__nkp_phase ph = { 1, 1, 1, 0 };
	struct nk__nkp_name nm = { 0x1000, 10, 1 };
	if (type == NK__NKP_PHASE)
		assert_int_equal(nk__nkp_write2(&f->w, type, &ph, sizeof ph, name, len), 0);
	else
		assert_int_equal(nk__nkp_write2(&f->w, type, &nm, sizeof nm, name, len), 0);
}
static char long_name[4098];
static void bad_name_empty(struct fb *f) { name_rec(f, NK__NKP_NAME, "", 0); }
static void bad_name_nul(struct fb *f) { name_rec(f, NK__NKP_NAME, "a\0b", 3); }
static void bad_name_long(struct fb *f) { name_rec(f, NK__NKP_NAME, long_name, 4097); }
static void good_name_4096(struct fb *f) { name_rec(f, NK__NKP_NAME, long_name, 4096); }
static void bad_phase_empty(struct fb *f) { name_rec(f, NK__NKP_PHASE, "", 0); }
static void bad_phase_nul(struct fb *f) { name_rec(f, NK__NKP_PHASE, "\0", 1); }
static void good_roi_unnamed(struct fb *f)
{
	struct nk__nkp_phase ph = { 1, 1, 0, 1 };
	fb_rec(f, NK__NKP_PHASE, &ph, sizeof ph);
}
static void bad_phase_kind(struct fb *f)
{
	struct nk__nkp_phase ph = { 1, 1, 0, 3 };
	fb_rec(f, NK__NKP_PHASE, &ph, sizeof ph);
}
static void bad_maps_nul(struct fb *f)
{
	struct nk__nkp_maps mp = { 1 };
	assert_int_equal(nk__nkp_write2(&f->w, NK__NKP_MAPS, &mp, sizeof mp, "a\0", 2), 0);
}
static void bad_free_size(struct fb *f) { fb_rec(f, NK__NKP_FREE, long_name, 23); }
static void bad_run_inside(struct fb *f) { fb_json(f, NK__NKP_RUN, "{}"); }
static void bad_machine_inside(struct fb *f) { fb_json(f, NK__NKP_MACHINE, "{}"); }
static void bad_end_json(struct fb *f) { fb_json(f, NK__NKP_END, "{\"complete\": tru}"); }
static void bad_end_array(struct fb *f) { fb_json(f, NK__NKP_END, "[true]"); }
static void no_end_then_process(struct fb *f)
{
	struct nk__nkp_process pr = { 9, 1, 1 };
	fb_rec(f, NK__NKP_PROCESS, &pr, sizeof pr);
}
static void comm_rec(struct fb *f, uint32_t rank, uint32_t size, uint32_t n, size_t ne)
{
	static const struct nk__nkp_comm_peer e[2] = { { 1, NK__COMM_P2P, 5, 40000 }, { 2, NK__COMM_COLL, 1, 64 } };
	struct nk__nkp_comm c = { rank, size, n, NK__COMM_FINALIZED, 5 };
	assert_int_equal(nk__nkp_write2(&f->w, NK__NKP_COMM | NK__NKP_OPTIONAL, &c, sizeof c, e, ne * sizeof e[0]), 0);
}
static void good_comm(struct fb *f) { comm_rec(f, 0, 3, 2, 2); }
static void good_comm_none(struct fb *f) { comm_rec(f, 2, 3, 0, 0); }
static void bad_comm_rank(struct fb *f) { comm_rec(f, 3, 3, 2, 2); }
static void bad_comm_size(struct fb *f) { comm_rec(f, 0, 0, 0, 0); }
static void bad_comm_len(struct fb *f) { comm_rec(f, 0, 3, 3, 2); }
static void bad_comm_many(struct fb *f) { comm_rec(f, 0, 1, 3, 2); }
static void bad_comm_peer(struct fb *f) { comm_rec(f, 0, 2, 2, 2); }
static void bad_comm_twice(struct fb *f) { good_comm(f); good_comm(f); }
static void nothing(struct fb *f) { (void)f; }
/* CALLERS (issue 16): entries of fb_body's samples at 30 and 12 (out of order), and one without a sample */
static struct nk__nkp_caller caller_of(uint64_t t, uint16_t depth)
{
	struct nk__nkp_sample s = smp(t, 0);
	struct nk__nkp_caller e = { .time_ns = t, .addr = s.addr, .tid = s.tid, .depth = depth };
	for (uint16_t k = 0; k < depth && k < NK__NKP_CALLER_DEPTH; k++)
		e.ret[k] = 0x401005 + 0x100 * k;
	return e;
}
static void callers_rec(struct fb *f, const struct nk__nkp_caller *e, size_t n)
{
	fb_rec(f, NK__NKP_CALLERS | NK__NKP_OPTIONAL, e, n * sizeof *e);
}
static void good_callers(struct fb *f)
{
	struct nk__nkp_caller e[3] = { caller_of(30, 2), caller_of(12, 6), caller_of(99, 1) };
	fb_body(f);
	callers_rec(f, e, 3);
}
static void bad_callers_len(struct fb *f)
{
	struct nk__nkp_caller e = caller_of(12, 1);
	fb_rec(f, NK__NKP_CALLERS | NK__NKP_OPTIONAL, &e, sizeof e - 8);
}
static void bad_callers_empty(struct fb *f) { callers_rec(f, NULL, 0); }
static void bad_callers_depth0(struct fb *f)
{
	struct nk__nkp_caller e[2] = { caller_of(12, 1), caller_of(30, 0) };
	callers_rec(f, e, 2);
}
static void bad_callers_depth7(struct fb *f)
{
	struct nk__nkp_caller e = caller_of(12, 7);
	callers_rec(f, &e, 1);
}
static void bad_callers_reserved(struct fb *f)
{
	struct nk__nkp_caller e = caller_of(12, 1);
	e.reserved = 2;
	callers_rec(f, &e, 1);
}
static void bad_callers_zero(struct fb *f)
{
	struct nk__nkp_caller e = caller_of(12, 3);
	e.ret[1] = 0;
	callers_rec(f, &e, 1);
}
static void bad_callers_beyond(struct fb *f)
{
	struct nk__nkp_caller e = caller_of(12, 2);
	e.ret[4] = 0x401000;
	callers_rec(f, &e, 1);
}
static void bad_callers_outside(struct fb *f)
{
	struct nk__nkp_caller e = caller_of(12, 1);
	fb_end(f);
	callers_rec(f, &e, 1);
	fb_proc(f, 101, 2000);
}

static void test_body_errors(void **state)
{
	(void)state;
	memset(long_name, 'n', sizeof long_name - 1);
	expect_body_err(bad_samples_len, NK_EPARSE, "SAMPLES record: length 100 is not a multiple of 48");
	expect_body_err(s_access, NK_EPARSE, "SAMPLES record: sample 1: access 3 out of range (0..2)");
	expect_body_err(s_source, NK_EPARSE, "sample 1: source 11 out of range (0..10)");
	expect_body_err(s_sampler0, NK_EPARSE, "sample 1: sampler 0 out of range (1..4)");
	expect_body_err(s_sampler4, NK_EPARSE, "sample 1: sampler 5 out of range (1..4)");
	expect_body_err(s_cpu, NK_EPARSE, "sample 1: cpu -2 out of range");
	expect_body_err(s_cpunode, NK_EPARSE, "sample 1: cpu_node -2 out of range");
	expect_body_err(s_pagenode, NK_EPARSE, "sample 1: page_node -2 out of range");
	expect_body_err(s_phase, NK_EPARSE,
			"SAMPLES record: sample 1: phase 5 is not declared by a PHASE record of process 100");
	expect_body_err(s_phase_declared_later, 0, "");
	expect_body_err(bad_meta_twice, NK_EPARSE, "META record: META must follow PROCESS");
	expect_body_err(bad_thread_size, NK_EPARSE, "THREAD record: length 39, expected 40");
	expect_body_err(bad_thread_cpu, NK_EPARSE, "THREAD record: cpu -3 out of range");
	expect_body_err(bad_site_depth, NK_EPARSE, "SITE record: depth 33, more than 32");
	expect_body_err(bad_site_len, NK_EPARSE, "SITE record: length 16 does not match depth 2");
	expect_body_err(bad_site_dup, NK_EPARSE, "SITE record: duplicate site id 3 (first at offset");
	expect_body_err(bad_alloc_site, NK_EPARSE,
			"ALLOC record: site 9 is not declared by a SITE record of process 100");
	expect_body_err(bad_alloc_kind, NK_EPARSE, "ALLOC record: kind 8 out of range");
	expect_body_err(good_alloc_site_later, 0, "");
	expect_body_err(bad_name_empty, NK_EPARSE, "NAME record: empty name");
	expect_body_err(bad_name_nul, NK_EPARSE, "NAME record: name contains a NUL byte");
	expect_body_err(bad_name_long, NK_EPARSE, "NAME record: name of 4097 bytes, more than 4096");
	expect_body_err(good_name_4096, 0, "");
	expect_body_err(bad_phase_empty, NK_EPARSE, "PHASE record: empty name");
	expect_body_err(bad_phase_nul, NK_EPARSE, "PHASE record: name contains a NUL byte");
	expect_body_err(good_roi_unnamed, 0, "");
	expect_body_err(bad_phase_kind, NK_EPARSE, "PHASE record: kind 3 out of range");
	expect_body_err(bad_maps_nul, NK_EPARSE, "MAPS record: maps text contains a NUL byte");
	expect_body_err(bad_free_size, NK_EPARSE, "FREE record: length 23, expected 24");
	expect_body_err(bad_run_inside, NK_EPARSE, "RUN record: RUN must be the first record");
	expect_body_err(bad_machine_inside, NK_EPARSE, "MACHINE record: MACHINE must follow RUN");
	expect_body_err(bad_end_json, NK_EPARSE, "END record: JSON does not parse");
	expect_body_err(bad_end_array, NK_EPARSE, "END record: JSON text is not an object");
	expect_body_err(no_end_then_process, NK_EPARSE, "process 100 (PROCESS at offset");
	expect_body_err(good_comm, 0, "");
	expect_body_err(good_comm_none, 0, "");
	expect_body_err(bad_comm_rank, NK_EPARSE, "COMM record: rank 3 of 3 out of range");
	expect_body_err(bad_comm_size, NK_EPARSE, "COMM record: rank 0 of 0 out of range");
	expect_body_err(bad_comm_len, NK_EPARSE, "COMM record: length 72 does not match 3 peers (expected 96)");
	expect_body_err(bad_comm_many, NK_EPARSE, "COMM record: 3 peers, more than 2 x size 1");
	expect_body_err(bad_comm_peer, NK_EPARSE, "COMM record: peer 1: rank 2 kind 1 out of range");
	expect_body_err(bad_comm_twice, NK_EPARSE, "COMM record: a second COMM record for process 100");
	expect_body_err(nothing, 0, "");
	expect_body_err(good_callers, 0, "");
	expect_body_err(bad_callers_len, NK_EPARSE, "CALLERS record: length 64 is not a positive multiple of 72");
	expect_body_err(bad_callers_empty, NK_EPARSE, "CALLERS record: length 0 is not a positive multiple of 72");
	expect_body_err(bad_callers_depth0, NK_EPARSE, "CALLERS record: entry 1: depth 0 out of range (1..6)");
	expect_body_err(bad_callers_depth7, NK_EPARSE, "CALLERS record: entry 0: depth 7 out of range (1..6)");
	expect_body_err(bad_callers_reserved, NK_EPARSE, "CALLERS record: entry 0: reserved field 2 (0 in version 1)");
	expect_body_err(bad_callers_zero, NK_EPARSE, "CALLERS record: entry 0: return address 1 is 0 (depth 3)");
	expect_body_err(bad_callers_beyond, NK_EPARSE,
			"CALLERS record: entry 0: return address 4 is set beyond the depth (depth 2)");
	expect_body_err(bad_callers_outside, NK_EPARSE, "CALLERS record: outside a process section");
}

static void test_order_errors(void **state)
{
	(void)state;
	struct fb f;
	size_t len;
	unsigned char *b;
	struct nk__nkp_process pr = { 1, 0, 0 };
	struct nk__nkp_sample s = smp(1, 0);

	/* SAMPLES before any process */
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_rec(&f, NK__NKP_SAMPLES, &s, sizeof s);
	fb_trailer(&f);
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "profile: offset 34: SAMPLES record: outside a process section");
	free(b);

	/* PROCESS without META */
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_rec(&f, NK__NKP_PROCESS, &pr, sizeof pr);
	fb_end(&f);
	fb_trailer(&f);
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "END record: PROCESS at offset 34 without META");
	free(b);

	/* no RUN */
	fb_init(&f);
	fb_proc(&f, 1, 0);
	fb_end(&f);
	fb_trailer(&f);
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "PROCESS record: the file does not begin with a RUN record");
	free(b);

	/* JSON: RUN not an object, META does not parse */
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "[1]");
	fb_trailer(&f);
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "offset 16: RUN record: JSON text is not an object");
	free(b);
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_rec(&f, NK__NKP_PROCESS, &pr, sizeof pr);
	fb_json(&f, NK__NKP_META, "{\"pid\": ");
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "META record: JSON does not parse");
	free(b);
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{\"a\": 1, \"a\": 2}");
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "RUN record: JSON does not parse");
	free(b);

	/* a phase (and a site) declared by one process means nothing in the next */
	struct nk__nkp_phase ph = { 1, 1, 4, 0 };
	struct nk__nkp_sample s4 = smp(2, 4);
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_proc(&f, 1, 0);
	assert_int_equal(nk__nkp_write2(&f.w, NK__NKP_PHASE, &ph, sizeof ph, "p4", 2), 0);
	fb_rec(&f, NK__NKP_SAMPLES, &s4, sizeof s4);
	fb_end(&f);
	fb_proc(&f, 2, 5);
	fb_rec(&f, NK__NKP_SAMPLES, &s4, sizeof s4);
	fb_end(&f);
	fb_trailer(&f);
	b = fb_done(&f, &len);
	expect_err(b, len, NK_EPARSE, "sample 0: phase 4 is not declared by a PHASE record of process 2");
	free(b);

	/* a known type with the optional bit is read as that type */
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_proc(&f, 1, 0);
	fb_rec(&f, NK__NKP_SAMPLES | NK__NKP_OPTIONAL, &s, sizeof s);
	fb_end(&f);
	f.samples = 1;
	fb_trailer(&f);
	b = fb_done(&f, &len);
	struct nk__nkp_profile *p = expect_ok(b, len);
	assert_int_equal(p->n_samples, 1);
	nk__nkp_free(p);
	free(b);

	/* TRAILER counts */
	for (int k = 0; k < 3; k++) {
		fb_init(&f);
		fb_json(&f, NK__NKP_RUN, "{}");
		fb_proc(&f, 1, 0);
		fb_rec(&f, NK__NKP_SAMPLES, &s, sizeof s);
		fb_end(&f);
		struct nk__nkp_trailer t = { f.w.records + (k == 0), f.procs + (k == 1), f.samples + (k == 2) };
		fb_rec(&f, NK__NKP_TRAILER, &t, sizeof t);
		b = fb_done(&f, &len);
		expect_err(b, len, NK_EPARSE,
			   k == 0 ? "TRAILER record: counts 6 records, the file has 5"
			   : k == 1 ? "TRAILER record: counts 2 processes, the file has 1"
				    : "TRAILER record: counts 2 samples, the file has 1");
		free(b);
	}
}

/* Every proper prefix of a valid file is rejected cleanly. */
static void check_every_prefix(const unsigned char *b, size_t len)
{
	for (size_t k = 0; k < len; k++) {
		unsigned char *cut = malloc(k ? k : 1);
		memcpy(cut, b, k);
		struct nk__nkp_profile *sentinel = (struct nk__nkp_profile *)&sentinel, *p = sentinel;
		nk_error err = { 0 };
		int rc = nk__nkp_parse(cut, k, &p, &err);
		if (rc != NK_EPARSE || err.code != rc || !err.message[0] || p != sentinel)
			fail_msg("prefix of %zu/%zu bytes: rc %d (%s)", k, len, rc, err.message);
		free(cut);
	}
}

static void test_truncation(void **state)
{
	(void)state;
	size_t len;
	unsigned char *b = valid_file(&len);
	check_every_prefix(b, len);
	struct nk__nkp_profile *p = expect_ok(b, len);
	nk__nkp_free(p);
	free(b);
}

static void test_load(void **state)
{
	(void)state;
	size_t len;
	unsigned char *b = valid_file(&len);
	char *path = nk_test_tmpfile((const char *)b, len);
	struct nk__nkp_profile *p = NULL;
	nk_error err = { 0 };
	char msg[300];

	assert_int_equal(nk__nkp_load(path, &p, &err), 0);
	assert_int_equal(p->n_procs, 2);
	nk__nkp_free(p);
	free(path);
	path = nk_test_tmpfile((const char *)b, len - 1);
	p = NULL;
	assert_int_equal(nk__nkp_load(path, &p, &err), NK_EPARSE);
	assert_null(p);
	snprintf(msg, sizeof msg, "%s: offset %zu: TRAILER record: truncated", path, len - 40);
	if (!strstr(err.message, msg))
		fail_msg("\"%s\" lacks \"%s\"", err.message, msg);
	unlink(path);
	assert_int_equal(nk__nkp_load(path, &p, &err), NK_ENOENT);
	assert_non_null(strstr(err.message, "no such file"));
	assert_int_equal(nk__nkp_load("/", &p, &err), NK_EIO);
	free(path);
	free(b);
}

/* ------------------------------------------------------------ merger */

static char tmpdir[64];

static char *write_part(const char *name, const unsigned char *b, size_t len)
{
	char *path = malloc(strlen(tmpdir) + strlen(name) + 2);
	sprintf(path, "%s/%s", tmpdir, name);
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(b, 1, len, fp), len);
	fclose(fp);
	return path;
}

/* A part of process @p pid: PROCESS, META, (MACHINE), the body, END when @p end. */
static unsigned char *part_bytes(uint32_t pid, uint64_t start, int machine, int end, size_t *len)
{
	struct fb f;
	fb_init(&f);
	fb_proc(&f, pid, start);
	if (machine)
		fb_json(&f, NK__NKP_MACHINE, "{\"format\": \"from-part\"}");
	fb_body(&f);
	if (end)
		fb_end(&f);
	return fb_done(&f, len);
}

static char *merged_path(void)
{
	static char p[128];
	snprintf(p, sizeof p, "%s/run.nkp", tmpdir);
	return p;
}

static struct nk__nkp_profile *merge_ok(const char *const *parts, size_t n, const struct nk__nkp_sample *extra,
					const uint32_t *pids, size_t n_extra, const char *machine, char **warn)
{
	nk_error err = { 0 };
	struct nk__nkp_profile *p = NULL;
	int rc = nk__nkp_merge(parts, n, "{\"sampler\": \"pagefault\", \"processes\": 99}", machine, extra, pids,
			       n_extra, merged_path(), warn, &err);
	if (rc)
		fail_msg("merge: %d %s", rc, err.message);
	if (nk__nkp_load(merged_path(), &p, &err))
		fail_msg("merged file: %s", err.message);
	return p;
}

static void test_merge_normal(void **state)
{
	(void)state;
	size_t l1, l2;
	unsigned char *b1 = part_bytes(200, 5000, 0, 1, &l1), *b2 = part_bytes(100, 1000, 1, 1, &l2);
	char *p1 = write_part("200.part", b1, l1), *p2 = write_part("100.part", b2, l2);
	const char *parts[] = { p1, p2 };
	char *warn = (char *)1;

	struct nk__nkp_profile *p = merge_ok(parts, 2, NULL, NULL, 0, "{\"format\": \"numakit-machine\"}", &warn);
	assert_null(warn);
	assert_int_equal(p->n_procs, 2);
	assert_int_equal(p->procs[0].info.pid, 100); /* sorted by start */
	assert_int_equal(p->procs[1].info.pid, 200);
	assert_int_equal(p->n_samples, 6);
	assert_int_equal(p->procs[0].complete, 1);
	assert_int_equal(p->procs[1].complete, 1);
	assert_int_equal(p->procs[0].n_sites, 1);
	assert_int_equal(p->procs[0].allocs[0].site, 1);
	assert_string_equal(p->procs[1].phases[0].name, "compute");
	assert_non_null(strstr(p->run_json, "\"processes\":2"));
	assert_non_null(strstr(p->run_json, "\"samples\":6"));
	assert_non_null(strstr(p->run_json, "pagefault"));
	assert_non_null(strstr(p->machine_json, "numakit-machine"));
	nk__nkp_free(p);

	/* without a MACHINE from the caller, the one a part carried */
	p = merge_ok(parts, 2, NULL, NULL, 0, NULL, &warn);
	assert_non_null(strstr(p->machine_json, "from-part"));
	nk__nkp_free(p);

	/* the merged file, cut at every byte, never parses */
	char *m = nk_test_slurp(merged_path());
	int fd = open(merged_path(), O_RDONLY);
	size_t ml = (size_t)lseek(fd, 0, SEEK_END);
	close(fd);
	check_every_prefix((const unsigned char *)m, ml);
	free(m);

	/* a garbage part beside them is skipped with a warning; only garbage: NK_EPARSE; none: NK_EIO */
	char *g = write_part("junk.part", (const unsigned char *)"garbage!garbage!garbage!", 24);
	const char *three[] = { p1, g, p2 };
	p = merge_ok(three, 3, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->n_procs, 2);
	assert_non_null(warn);
	assert_non_null(strstr(warn, "junk.part: skipped: not a numakit part file"));
	free(warn);
	nk__nkp_free(p);
	nk_error err = { 0 };
	const char *only[] = { g };
	assert_int_equal(nk__nkp_merge(only, 1, NULL, NULL, NULL, NULL, 0, merged_path(), &warn, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "no usable part file"));
	assert_null(warn);
	const char *missing[] = { "/nonexistent/1.part" };
	assert_int_equal(nk__nkp_merge(missing, 1, NULL, NULL, NULL, NULL, 0, merged_path(), &warn, &err), NK_EIO);
	assert_int_equal(nk__nkp_merge(parts, 2, "[1]", NULL, NULL, NULL, 0, merged_path(), &warn, &err), NK_EINVAL);
	assert_int_equal(nk__nkp_merge(parts, 2, NULL, NULL, NULL, NULL, 0, "/nonexistent/dir/x.nkp", &warn, &err),
			 NK_EIO);
	assert_non_null(strstr(err.message, "cannot create a temporary file"));

	/* a part with only PROCESS: skipped */
	size_t lp;
	struct fb f;
	struct nk__nkp_process pr = { 7, 1, 1 };
	fb_init(&f);
	fb_rec(&f, NK__NKP_PROCESS, &pr, sizeof pr);
	unsigned char *bp = fb_done(&f, &lp);
	char *pp = write_part("7.part", bp, lp);
	const char *withp[] = { pp, p1 };
	p = merge_ok(withp, 2, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->n_procs, 1);
	assert_non_null(strstr(warn, "7.part: skipped: no whole META record"));
	free(warn);
	nk__nkp_free(p);

	unlink(pp), unlink(g), unlink(p1), unlink(p2);
	free(pp), free(bp), free(g), free(p1), free(p2), free(b1), free(b2);
}

static void test_merge_cut(void **state)
{
	(void)state;
	size_t l1;
	unsigned char *b1 = part_bytes(300, 100, 0, 1, &l1);
	char *warn = NULL;

	/* cut at every byte after META: always merges, the result always parses */
	size_t min = 16 + 32 + 16 + 0; /* header + PROCESS + META header: META text follows */
	for (size_t k = min; k <= l1; k++) {
		char *p1 = write_part("300.part", b1, k);
		const char *parts[] = { p1 };
		nk_error err = { 0 };
		int rc = nk__nkp_merge(parts, 1, NULL, NULL, NULL, NULL, 0, merged_path(), &warn, &err);
		if (rc == 0) {
			struct nk__nkp_profile *p = NULL;
			if (nk__nkp_load(merged_path(), &p, &err))
				fail_msg("cut at %zu: %s", k, err.message);
			assert_int_equal(p->n_procs, 1);
			assert_int_equal(p->procs[0].complete, k == l1);
			if (k < l1) {
				assert_non_null(warn);
				assert_non_null(strstr(p->procs[0].end_json, "\"how\":\"killed\""));
			}
			nk__nkp_free(p);
		} else if (rc != NK_EPARSE) {
			fail_msg("cut at %zu: %d %s", k, rc, err.message);
		}
		free(warn);
		warn = NULL;
		unlink(p1);
		free(p1);
	}

	/* cut in the middle of the SAMPLES record: what came before is kept */
	size_t l2;
	unsigned char *b2 = part_bytes(301, 100, 0, 0, &l2);
	char *p2 = write_part("301.part", b2, l2 - 24 - 16 - 20); /* FREE (40) gone, SAMPLES cut */
	const char *parts[] = { p2 };
	struct nk__nkp_profile *p = merge_ok(parts, 1, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->procs[0].n_samples, 0);
	assert_int_equal(p->procs[0].n_allocs, 1);
	assert_int_equal(p->procs[0].n_phases, 1);
	assert_int_equal(p->procs[0].complete, 0);
	assert_non_null(strstr(warn, "301.part: process 301: cut at offset"));
	assert_non_null(strstr(warn, "cut after 124 of its 144 bytes"));
	free(warn);
	nk__nkp_free(p);
	unlink(p2);
	free(p2);

	/* no END at all: kept whole, marked killed */
	p2 = write_part("301.part", b2, l2);
	parts[0] = p2;
	p = merge_ok(parts, 1, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->procs[0].n_samples, 3);
	assert_int_equal(p->procs[0].n_frees, 1);
	assert_int_equal(p->procs[0].complete, 0);
	assert_non_null(strstr(p->procs[0].end_json, "\"complete\":false"));
	assert_non_null(strstr(p->procs[0].end_json, "\"samples\":3"));
	assert_non_null(strstr(warn, "process 301 has no END (killed?)"));
	free(warn);
	nk__nkp_free(p);
	unlink(p2);
	free(p2);
	free(b2);

	/* corrupt in the middle (a bad sample, a duplicate site), and a phase lost in the cut */
	struct fb f;
	struct nk__nkp_sample s[2] = { smp(1, 0), smp(2, 3) }, bad = smp(3, 0);
	struct nk__nkp_phase ph = { 50, 7, 3, 0 };
	struct { struct nk__nkp_site s; uint64_t ip[1]; } site = { { 2, 1 }, { 0x401000 } };
	struct nk__nkp_alloc al = { 0x10000, 4096, 10, 7, 2, NK__ALLOC_MALLOC, 1 };
	bad.access = 9;
	fb_init(&f);
	fb_proc(&f, 302, 10);
	fb_rec(&f, NK__NKP_SAMPLES, s, sizeof s); /* phase 3 declared after the cut */
	fb_rec(&f, NK__NKP_ALLOC, &al, sizeof al); /* site 2 likewise */
	fb_rec(&f, NK__NKP_SAMPLES, &bad, sizeof bad);
	fb_rec(&f, NK__NKP_SITE, &site, sizeof site);
	assert_int_equal(nk__nkp_write2(&f.w, NK__NKP_PHASE, &ph, sizeof ph, "late", 4), 0);
	fb_end(&f);
	b2 = fb_done(&f, &l2);
	p2 = write_part("302.part", b2, l2);
	parts[0] = p2;
	p = merge_ok(parts, 1, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->procs[0].n_samples, 2);
	assert_int_equal(p->procs[0].samples[1].phase, 0);
	assert_int_equal(p->procs[0].allocs[0].site, 0);
	assert_int_equal(p->procs[0].complete, 0);
	assert_non_null(strstr(warn, "SAMPLES record: sample 0: access 9 out of range"));
	assert_non_null(strstr(warn, "1 samples of an undeclared phase put in phase 0"));
	assert_non_null(strstr(warn, "1 allocations of an undeclared site given site 0"));
	free(warn);
	nk__nkp_free(p);
	unlink(p2);
	free(p2);
	free(b2);

	fb_init(&f);
	fb_proc(&f, 303, 10);
	fb_rec(&f, NK__NKP_SITE, &site, sizeof site);
	fb_rec(&f, NK__NKP_SITE, &site, sizeof site);
	fb_end(&f);
	b2 = fb_done(&f, &l2);
	p2 = write_part("303.part", b2, l2);
	parts[0] = p2;
	p = merge_ok(parts, 1, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->procs[0].n_sites, 1);
	assert_non_null(strstr(warn, "SITE record: duplicate site id 2"));
	free(warn);
	nk__nkp_free(p);
	unlink(p2);
	free(p2);
	free(b2);
	free(b1);
}

static void test_merge_extra(void **state)
{
	(void)state;
	size_t l1, l2;
	unsigned char *b1 = part_bytes(400, 1000000, 0, 1, &l1), *b2 = part_bytes(401, 500, 0, 1, &l2);
	char *p1 = write_part("400.part", b1, l1), *p2 = write_part("401.part", b2, l2);
	const char *parts[] = { p1, p2 };
	size_t n = 70000 + 4;
	struct nk__nkp_sample *ex = calloc(n, sizeof *ex);
	uint32_t *pid = calloc(n, sizeof *pid);
	char *warn = NULL;

	for (size_t i = 0; i < 70000; i++) {
		ex[i] = smp(1000000 + 70000 - i, 0); /* absolute, given in reverse time order */
		ex[i].sampler = NK__SAMPLER_HW;
		pid[i] = 400;
	}
	ex[70000] = smp(10, 0); /* before its process started: clamped at 0 */
	pid[70000] = 401;
	ex[70001] = smp(600, 0);
	pid[70001] = 401;
	ex[70002] = smp(600, 0); /* no such process */
	pid[70002] = 999;
	ex[70003] = smp(600, 0); /* invalid */
	ex[70003].access = 5;
	pid[70003] = 401;

	struct nk__nkp_profile *p = merge_ok(parts, 2, ex, pid, n, NULL, &warn);
	assert_int_equal(p->n_procs, 2);
	assert_int_equal(p->procs[0].info.pid, 401);
	const struct nk__nkp_process_data *a = &p->procs[0], *b = &p->procs[1];
	assert_int_equal(a->n_samples, 3 + 2);
	assert_int_equal(a->samples[3].time_ns, 0);
	assert_int_equal(a->samples[4].time_ns, 100);
	assert_int_equal(b->n_samples, 3 + 70000);
	assert_int_equal(b->samples[3].time_ns, 1); /* sorted by time */
	assert_int_equal(b->samples[3 + 69999].time_ns, 70000);
	assert_int_equal(b->samples[3].sampler, NK__SAMPLER_HW);
	assert_int_equal(p->n_samples, 70008);
	assert_non_null(strstr(warn, "1 extra samples dropped as invalid (the first: access 5 out of range"));
	assert_non_null(strstr(warn, "1 extra samples dropped: no part of their process"));
	free(warn);
	nk__nkp_free(p);

	/* no SAMPLES record holds more than 64 Ki samples */
	char *m = nk_test_slurp(merged_path());
	int fd = open(merged_path(), 0);
	size_t ml = (size_t)lseek(fd, 0, SEEK_END), pos = 16, records = 0;
	close(fd);
	while (pos < ml) {
		struct nk__nkp_record_header h;
		memcpy(&h, m + pos, sizeof h);
		if (h.type == NK__NKP_SAMPLES)
			assert_true(h.length <= NK__NKP_SAMPLES_PER_RECORD * sizeof(struct nk__nkp_sample));
		pos += sizeof h + h.length;
		records++;
	}
	assert_int_equal(pos, ml);
	assert_true(records > 20);
	free(m);

	unlink(p1), unlink(p2), unlink(merged_path());
	free(p1), free(p2), free(b1), free(b2), free(ex), free(pid);
}

/* CALLERS entries are kept sorted and found by their sample; an entry without a sample is ignored; a merge
 * keeps the record optional, so that a reader without it skips it. */
static void test_callers(void **state)
{
	(void)state;
	struct fb f;
	size_t len;
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{}");
	fb_proc(&f, 100, 1000);
	good_callers(&f);
	fb_end(&f);
	fb_trailer(&f);
	unsigned char *b = fb_done(&f, &len);
	struct nk__nkp_profile *p = expect_ok(b, len);
	const struct nk__nkp_process_data *pd = &p->procs[0];
	assert_int_equal(pd->n_callers, 3);
	assert_true(pd->callers[0].time_ns == 12 && pd->callers[1].time_ns == 30 && pd->callers[2].time_ns == 99);
	const struct nk__nkp_caller *e = nk__nkp_find_caller(pd, &pd->samples[2]); /* smp(30) */
	assert_non_null(e);
	assert_true(e->time_ns == 30 && e->depth == 2 && e->ret[0] == 0x401005 && e->ret[1] == 0x401105);
	e = nk__nkp_find_caller(pd, &pd->samples[0]); /* smp(12) */
	assert_true(e && e->depth == 6 && e->ret[5] == 0x401505);
	assert_null(nk__nkp_find_caller(pd, &pd->samples[1])); /* smp(25): none */
	struct nk__nkp_sample other = pd->samples[0];
	other.tid++;
	assert_null(nk__nkp_find_caller(pd, &other));
	nk__nkp_free(p);
	free(b);

	/* a part with CALLERS, merged: the record keeps its optional bit and its entries */
	fb_init(&f);
	fb_proc(&f, 300, 1000);
	good_callers(&f);
	fb_end(&f);
	b = fb_done(&f, &len);
	char *pp = write_part("300.part", b, len);
	const char *parts[] = { pp };
	char *warn = NULL;
	p = merge_ok(parts, 1, NULL, NULL, 0, NULL, &warn);
	assert_int_equal(p->procs[0].n_callers, 3);
	nk__nkp_free(p);
	free(warn);
	char *m = nk_test_slurp(merged_path());
	int fd = open(merged_path(), 0);
	size_t ml = (size_t)lseek(fd, 0, SEEK_END), pos = 16, found = 0;
	close(fd);
	while (pos < ml) {
		struct nk__nkp_record_header h;
		memcpy(&h, m + pos, sizeof h);
		if ((h.type & ~NK__NKP_OPTIONAL) == NK__NKP_CALLERS) {
			assert_int_equal(h.type, NK__NKP_CALLERS | NK__NKP_OPTIONAL);
			assert_int_equal(h.length, 3 * sizeof(struct nk__nkp_caller));
			found++;
		}
		pos += sizeof h + h.length;
	}
	assert_int_equal(found, 1);
	free(m);
	unlink(pp);
	unlink(merged_path());
	free(pp);
	free(b);
}

/* ------------------------------------------------------------ fuzz seeds */

/* The seeds of fuzz/corpus/profile: a profile, optionally "\n--PART--\n" and a part (fuzz/fuzz_profile.c). */
static unsigned char *seed(int i, size_t *len)
{
	static const char sep[] = "\n--PART--\n";
	struct fb f;
	size_t hl, pl;
	unsigned char *h, *part, *b;

	if (i == 0)
		return valid_file(len);
	if (i == 4) { /* a process whose first touches have CALLERS entries (issue 16) */
		fb_init(&f);
		fb_json(&f, NK__NKP_RUN, "{\"numakit\": \"0.1.0\", \"sampler\": \"pagefault\"}");
		fb_proc(&f, 100, 1000);
		good_callers(&f);
		fb_end(&f);
		fb_trailer(&f);
		return fb_done(&f, len);
	}
	fb_init(&f);
	fb_json(&f, NK__NKP_RUN, "{\"numakit\": \"0.1.0\"}");
	fb_trailer(&f);
	h = fb_done(&f, &hl);
	if (i == 1) {
		*len = hl;
		return h;
	}
	part = part_bytes(300, 100, i == 2, i == 3, &pl);
	if (i == 2)
		pl -= 30; /* cut in its last record */
	*len = hl + sizeof sep - 1 + pl;
	b = malloc(*len);
	memcpy(b, h, hl);
	memcpy(b + hl, sep, sizeof sep - 1);
	memcpy(b + hl + sizeof sep - 1, part, pl);
	free(h);
	free(part);
	return b;
}
static const char *const seed_names[] = { "two-processes", "minimal", "merge-cut-part", "merge-whole-part", "callers" };
#define N_SEEDS (sizeof seed_names / sizeof *seed_names)

static void write_seeds(const char *dir)
{
	for (size_t i = 0; i < N_SEEDS; i++) {
		char path[512];
		size_t len;
		unsigned char *b = seed((int)i, &len);
		snprintf(path, sizeof path, "%s/%s", dir, seed_names[i]);
		FILE *fp = fopen(path, "wb");
		if (!fp || fwrite(b, 1, len, fp) != len || fclose(fp))
			fprintf(stderr, "cannot write %s\n", path);
		free(b);
	}
}

/* The committed seeds are what the generator writes now (regenerate with test_nkp --write-seeds DIR). */
static void test_seeds(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_SEEDS; i++) {
		char path[512];
		size_t len;
		unsigned char *b = seed((int)i, &len);
		snprintf(path, sizeof path, "%s/../fuzz/corpus/profile/%s", NK_TEST_SRC, seed_names[i]);
		char *c = nk_test_slurp(path);
		if (memcmp(b, c, len) || c[len])
			fail_msg("%s differs from what test_nkp generates: "
				 "run test_nkp --write-seeds fuzz/corpus/profile", path);
		assert_true(len < 4096);
		free(c);
		free(b);
	}
}

static int setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/nkp-testXXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	unlink(merged_path());
	return rmdir(tmpdir);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
		write_seeds(argv[2]);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_header_errors),
		cmocka_unit_test(test_record_errors), cmocka_unit_test(test_body_errors),
		cmocka_unit_test(test_order_errors), cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_load),	     cmocka_unit_test(test_merge_normal),
		cmocka_unit_test(test_merge_cut),    cmocka_unit_test(test_merge_extra),
		cmocka_unit_test(test_callers),      cmocka_unit_test(test_seeds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
