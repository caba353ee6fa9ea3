/* SPDX-License-Identifier: BSD-3-Clause
 * The callers of first touches made inside a library (issue 16): when the pagefault sampler's fault on a page
 * not yet present was raised outside the main executable's code (memset, memcpy, a Fortran runtime copy), the
 * return addresses on the faulting thread's stack, so that the analysis can name the program's own line that
 * called the library (docs/profile.md, "Who first touched it"; the record: src/profile/nkp.h, CALLERS).
 *
 * How: a bounded scan of the stack from the faulting context's stack pointer for words that point into an
 * executable segment of a loaded object just after a call instruction (the bytes before it decode as
 * `call rel32` or one of the `call r/m64` forms).  Not an unwinder: the scan runs inside the SIGSEGV handler,
 * where libgcc's unwinder (it takes the loader's lock and may allocate on first use) is not safe, and it needs
 * no new dependency (libunwind).  The scan stops at the first return address into the main executable (the
 * analysis names nothing past the program's own frame), so memset called from the program costs two reads.  A leaf like memset pushes no frame, so the word at the stack pointer is its
 * return address; a deeper library call (calloc's memset, a Fortran runtime copy) leaves its own frames' words
 * first, which the analysis skips as not the program's.  The limits: a stale return address left in a
 * library frame's unused slots may come before the real one (the analysis then names a line the program ran
 * earlier), and a call more than CALLERS_SCAN_BYTES deep into the library is missed.
 *
 * AS-safe and allocation-free on the fault path: memory is read with process_vm_readv, which fails rather
 * than faults on what is not mapped (a page of the stack revoked by the sampler, an object unloaded since the
 * table was made), and entries wait in a fixed table of slots (FREE -> FILLING -> READY, as the sampler's
 * pending first touches) until the flusher writes them as CALLERS records under the writer lock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "prof.h"
#include "runtime_impl.h"

#define CALLERS_RANGES 256       /* executable segments remembered */
#define CALLERS_SLOTS 4096       /* entries waiting for the flusher (a power of two; 288 KiB) */
#define CALLERS_SCAN_BYTES 2048u /* how far up the stack the scan looks */
#define CALLERS_CHUNK_WORDS 32   /* stack words read at a time (256 bytes of the handler's stack) */
#define CALLERS_CANDIDATES 8     /* candidate words checked at a time */
#define CALLERS_BATCH 64         /* entries per CALLERS record */

struct xrange {
	uintptr_t lo, hi;
};

/* Two tables, one published: a rescan (dlopen) fills the other and publishes it; a handler reading the old
 * one meanwhile only tests candidates that process_vm_readv then checks. */
static struct xtable {
	struct xrange r[CALLERS_RANGES];
	unsigned n;
	struct xrange exe[8]; /* the main executable's own */
	unsigned n_exe;
} tables[2];
static atomic_int table_cur = -1;

enum { CS_FREE = 0, CS_FILLING = 1, CS_READY = 2 };
static struct {
	atomic_int state;
	struct nk__nkp_caller e;
} slots[CALLERS_SLOTS];

static atomic_ulong n_noted, n_lost;

static int add_range(struct xrange *r, unsigned *n, unsigned cap, uintptr_t lo, uintptr_t hi)
{
	if (*n >= cap || hi <= lo)
		return -1;
	r[(*n)++] = (struct xrange){ lo, hi };
	return 0;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct xtable *t = arg;
	(void)size;
	/* the first object is the main program (its name empty) */
	int exe = t->n == 0 && t->n_exe == 0 && (!info->dlpi_name || !info->dlpi_name[0]);
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		(void)add_range(t->r, &t->n, CALLERS_RANGES, lo, hi);
		if (exe)
			(void)add_range(t->exe, &t->n_exe, 8, lo, hi);
	}
	return 0;
}

/* Rescans one at a time (two threads' dlopen); the handler never takes it. */
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

void nkp_callers_scan_objects(void)
{
	pthread_mutex_lock(&scan_lock);
	int cur = atomic_load_explicit(&table_cur, memory_order_acquire);
	struct xtable *t = &tables[cur == 0 ? 1 : 0];
	t->n = t->n_exe = 0;
	dl_iterate_phdr(scan_cb, t);
	atomic_store_explicit(&table_cur, cur == 0 ? 1 : 0, memory_order_release);
	pthread_mutex_unlock(&scan_lock);
}

static int in_ranges(const struct xrange *r, unsigned n, uintptr_t a)
{
	for (unsigned i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return 1;
	return 0;
}

/*
 * Whether the 8 bytes @p b that end just before a return address end with a call instruction: e8 rel32, or
 * ff /2 (call r/m64) with a register, [reg], [reg+disp8], [reg+disp32], [rip+disp32] or a SIB byte.  A REX
 * prefix before ff does not matter (it is before the bytes looked at).
 */
static int ends_with_call(const unsigned char b[8])
{
	if (b[3] == 0xe8) /* call rel32: 5 bytes */
		return 1;
	if (b[6] == 0xff && (b[7] & 0xf8) == 0xd0) /* ff d0+r: call reg */
		return 1;
	if (b[6] == 0xff && (b[7] & 0xf8) == 0x10 && b[7] != 0x14 && b[7] != 0x15) /* ff 10+r: call [reg] */
		return 1;
	if (b[5] == 0xff && b[6] == 0x14 && (b[7] & 7) != 5) /* ff 14 sib: call [base+index*s] */
		return 1;
	if (b[5] == 0xff && (b[6] & 0xf8) == 0x50 && b[6] != 0x54) /* ff 50+r d8: call [reg+disp8] */
		return 1;
	if (b[4] == 0xff && b[5] == 0x54) /* ff 54 sib d8 */
		return 1;
	if (b[2] == 0xff && (b[3] == 0x15 || ((b[3] & 0xf8) == 0x90 && b[3] != 0x94))) /* ff 15/90+r d32 */
		return 1;
	if (b[1] == 0xff && (b[2] == 0x94 || (b[2] == 0x14 && (b[3] & 7) == 5))) /* ff 94 sib d32, ff 14 sib(b5) d32 */
		return 1;
	return 0;
}

/* Read @p n remote pieces of memory; the pieces read in full from the first (process_vm_readv stops at the
 * first one it cannot read).  AS-safe. */
static size_t read_pieces(struct iovec *local, struct iovec *remote, size_t n, size_t each)
{
	ssize_t got = process_vm_readv(getpid(), local, n, remote, n, 0);
	return got <= 0 ? 0 : (size_t)got / each;
}

/* Words of the stack from @p a: the return addresses among them appended to @p e, up to the first one into
 * the main executable (*@p done set: the analysis names nothing past the program's own frame).  Returns how
 * many words were read (fewer than asked at the end of the stack's mapping).  AS-safe. */
static size_t scan_chunk(const struct xtable *t, uintptr_t a, struct nk__nkp_caller *e, int *done)
{
	uint64_t words[CALLERS_CHUNK_WORDS];
	/* in pieces that end at page boundaries, so that the stack's last mapped page ends the read */
	uintptr_t cut = (a | 4095) + 1;
	size_t len0 = cut - a < sizeof words ? cut - a : sizeof words;
	struct iovec lv[2] = { { words, len0 }, { (char *)words + len0, sizeof words - len0 } };
	struct iovec rv[2] = { { (void *)a, len0 }, { (void *)cut, sizeof words - len0 } };
	ssize_t got = process_vm_readv(getpid(), lv, len0 < sizeof words ? 2 : 1, rv, len0 < sizeof words ? 2 : 1, 0);
	size_t nw = got > 0 ? (size_t)got / 8 : 0;
	for (size_t i = 0; i < nw && e->depth < NK__NKP_CALLER_DEPTH && !*done;) {
		/* candidates: words in an executable segment; the 8 bytes before each checked in one read */
		uintptr_t cand[CALLERS_CANDIDATES];
		unsigned char code[CALLERS_CANDIDATES][8];
		struct iovec cl[CALLERS_CANDIDATES], cr[CALLERS_CANDIDATES];
		size_t nc = 0;
		for (; i < nw && nc < CALLERS_CANDIDATES; i++) {
			uintptr_t w = (uintptr_t)words[i];
			if (w < 4096 + 8 || !in_ranges(t->r, t->n, w))
				continue;
			cand[nc] = w;
			cl[nc] = (struct iovec){ code[nc], 8 };
			cr[nc] = (struct iovec){ (void *)(w - 8), 8 };
			nc++;
		}
		for (size_t k = 0; k < nc && e->depth < NK__NKP_CALLER_DEPTH && !*done;) {
			size_t ok = read_pieces(cl + k, cr + k, nc - k, 8);
			for (size_t q = 0; q < ok && e->depth < NK__NKP_CALLER_DEPTH && !*done; q++)
				if (ends_with_call(code[k + q])) {
					e->ret[e->depth++] = cand[k + q];
					*done = in_ranges(t->exe, t->n_exe, cand[k + q]);
				}
			k += ok + 1; /* past the one it could not read */
		}
	}
	return nw;
}

void nkp_callers_note(const void *uctx, const struct nk__nkp_sample *s)
{
#if defined(__x86_64__)
	int cur = atomic_load_explicit(&table_cur, memory_order_acquire);
	if (cur < 0 || !uctx || !s->ip)
		return;
	const struct xtable *t = &tables[cur];
	/* Only outside the main executable: its own first touches name its own line already. */
	if (in_ranges(t->exe, t->n_exe, (uintptr_t)s->ip))
		return;
	const ucontext_t *uc = uctx;
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	struct nk__nkp_caller e;
	memset(&e, 0, sizeof e);
	/* A chunk at a time: the handler may run on the program's small alternate signal stack. */
	size_t read = 0;
	int done = 0;
	for (uintptr_t a = sp; a - sp < CALLERS_SCAN_BYTES && e.depth < NK__NKP_CALLER_DEPTH && !done;
	     a += 8 * CALLERS_CHUNK_WORDS) {
		size_t nw = scan_chunk(t, a, &e, &done);
		read += nw;
		if (nw < CALLERS_CHUNK_WORDS)
			break;
	}
	if (!read) {
		atomic_fetch_add_explicit(&n_lost, 1, memory_order_relaxed);
		return;
	}
	if (!e.depth)
		return;
	e.time_ns = s->time_ns;
	e.addr = s->addr;
	e.tid = s->tid;
	unsigned start = (unsigned)(s->addr >> 12);
	for (unsigned i = 0; i < CALLERS_SLOTS; i++) {
		unsigned j = (start + i) & (CALLERS_SLOTS - 1);
		int st = CS_FREE;
		if (atomic_compare_exchange_strong_explicit(&slots[j].state, &st, CS_FILLING, memory_order_acquire,
							    memory_order_relaxed)) {
			slots[j].e = e;
			atomic_store_explicit(&slots[j].state, CS_READY, memory_order_release);
			atomic_fetch_add_explicit(&n_noted, 1, memory_order_relaxed);
			return;
		}
	}
	atomic_fetch_add_explicit(&n_lost, 1, memory_order_relaxed);
#else
	(void)uctx;
	(void)s;
#endif
}

void nkp_callers_drain(void)
{
	struct nk__nkp_caller batch[CALLERS_BATCH];
	size_t n = 0;
	for (unsigned i = 0; i <= CALLERS_SLOTS; i++) {
		if (i < CALLERS_SLOTS && atomic_load_explicit(&slots[i].state, memory_order_acquire) == CS_READY) {
			batch[n++] = slots[i].e;
			atomic_store_explicit(&slots[i].state, CS_FREE, memory_order_release);
		}
		if (n && (n == CALLERS_BATCH || i == CALLERS_SLOTS)) {
			(void)nk__nkp_write(&nkp_wr, NK__NKP_CALLERS | NK__NKP_OPTIONAL, batch, n * sizeof batch[0]);
			n = 0;
		}
	}
}

void nkp_callers_counts(uint64_t *noted, uint64_t *lost)
{
	*noted = atomic_load_explicit(&n_noted, memory_order_relaxed);
	*lost = atomic_load_explicit(&n_lost, memory_order_relaxed);
}

void nkp_callers_after_fork(void)
{
	for (unsigned i = 0; i < CALLERS_SLOTS; i++)
		atomic_store_explicit(&slots[i].state, CS_FREE, memory_order_relaxed);
	atomic_store(&n_noted, 0);
	atomic_store(&n_lost, 0);
}
