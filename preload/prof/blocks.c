/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_prof.so's small blocks (issue 19; split from alloc.c, issue 15): blocks under min_size recorded
 * by site, their events batched into BLOCKS records, the set of live ones, their heap pages in the registry.
 * It must not allocate from the heap or include ../common/interpose.h (its set comes from nkp_real_mmap);
 * its state is guarded by nkp_blk_lock, which nkp_alloc_flush only tries from a signal handler.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc_impl.h"
#include "prof.h"

#pragma weak nkp_pf_new_block
#pragma weak nkp_pf_pin
#pragma weak nkp_pf_unpin
#pragma weak nkp_pf_self_begin
#pragma weak nkp_pf_self_end

/* The profiler's own time in the calling thread (issue 13), for the pagefault sampler (pf_fault.c), which scales
 * the thread's samples: the hook's start, which is also its event's time (the block is live from before it to
 * after it), and its end, one clock read (vDSO) more per recorded malloc or free, only under that sampler. */
static uint64_t self_begin(void)
{
	return nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_self_begin ? nkp_pf_self_begin() : 0;
}

static void self_end(uint64_t t0)
{
	if (t0)
		nkp_pf_self_end(t0);
}

/* ---------------------------------------------------------------- small blocks (issue 19)
 *
 * A block smaller than min_size is recorded by its site like a large one, in a compact form: no table entry
 * of its own in the range registry and no record per call, but one 32-byte event (struct nk__nkp_block) in a
 * batch written as one BLOCKS record when full (sbuf) or when the part closes, and an entry in an
 * open-addressing set of the live ones (stab), so that free() writes an event only for blocks recorded and
 * a child after fork gets the live ones.  The pages holding them join the sampled set as heap ranges
 * (nkp_heap_cover): the samplers draw whole pages there, and a sample is attributed offline by its exact address
 * to the block that holds it (a sample on malloc's own headers or on free chunks is attributed to no
 * block).  The costs per small malloc: the call stack (backtrace, as for a large block), the site lookup,
 * one event; per free of a recorded block: one set lookup and one event.  All under nkp_blk_lock.
 *
 * The small blocks of skipped sites (sites.c: the loader, libc, threading runtimes, numakit) are not
 * recorded, but they share heap pages with the program's and their owners use them where a revoked page
 * cannot fault into the sampler: libc reads into stdio buffers with read(2) inside the library (EFAULT),
 * pthread_create reads the attribute's cpu set with every signal blocked (the process dies), the kernel
 * reads futex words.  They enter the set too, flagged SBLK_PINNED, without events: their pages are pinned
 * (nkp_pf_pin: never revoked) from their malloc to their free.
 */

struct sblk {
	uintptr_t addr; /* 0 empty */
	uint32_t size, site;
	uint64_t time_ns;
	uint32_t tid, kind; /* kind: NK__ALLOC_*, | SBLK_PINNED for a skipped site's block */
};
#define SBLK_PINNED 0x80000000u
static struct sblk *stab;
static size_t stab_cap, stab_n, stab_bytes;
static atomic_size_t n_small; /* live recorded small blocks: a fast "nothing to look up" for free() */
#define SBUF_CAP 2048         /* events per BLOCKS record (64 KiB) */
static struct nk__nkp_block sbuf[SBUF_CAP];
static size_t sbuf_n;
static uint64_t small_allocs, small_frees, small_lost; /* END counters */
static uint64_t pinned_allocs;                         /* END counter: skipped sites' blocks pinned */
static size_t pinned_live;                             /* set entries that are pinned blocks */

static size_t stab_hash(uintptr_t a, size_t cap)
{
	return (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
}

/* nkp_blk_lock held. */
static void sbuf_flush_locked(void)
{
	if (sbuf_n && nkp_record(NK__NKP_BLOCKS | NK__NKP_OPTIONAL, sbuf, sbuf_n * sizeof sbuf[0], NULL, 0))
		small_lost += sbuf_n;
	sbuf_n = 0;
}

static void sbuf_put(const struct nk__nkp_block *e)
{
	if (sbuf_n == SBUF_CAP)
		sbuf_flush_locked();
	sbuf[sbuf_n++] = *e;
}

/* Grow the set (twice as large, mmap'd: not from the heap we record).  nkp_blk_lock held.  -1 when out of memory. */
static int stab_grow(void)
{
	size_t cap = stab_cap ? stab_cap * 2 : 4096;
	size_t bytes = cap * sizeof(struct sblk);
	struct sblk *t = nkp_real_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < stab_cap; i++)
		if (stab[i].addr)
			for (size_t j = stab_hash(stab[i].addr, cap);; j = (j + 1) & (cap - 1))
				if (!t[j].addr) {
					t[j] = stab[i];
					break;
				}
	if (stab)
		nkp_real_munmap(stab, stab_bytes);
	stab = t;
	stab_cap = cap;
	stab_bytes = bytes;
	return 0;
}

static struct sblk *stab_find(uintptr_t a)
{
	if (!stab_cap)
		return NULL;
	for (size_t i = stab_hash(a, stab_cap);; i = (i + 1) & (stab_cap - 1)) {
		if (!stab[i].addr)
			return NULL;
		if (stab[i].addr == a)
			return &stab[i];
	}
}

static void stab_delete(struct sblk *b)
{
	size_t i = (size_t)(b - stab), cap = stab_cap;
	stab[i].addr = 0;
	stab_n--;
	for (size_t j = (i + 1) & (cap - 1); stab[j].addr; j = (j + 1) & (cap - 1)) {
		size_t h = stab_hash(stab[j].addr, cap);
		int between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
		if (!between) {
			stab[i] = stab[j];
			stab[j].addr = 0;
			i = j;
		}
	}
}

/* Forget the small block at @p a, if it is in the set: a FREE event (at @p now, 0: read the clock) for a
 * recorded one; for a pinned one, its size (the caller unpins its pages), else 0.  nkp_blk_lock held. */
static size_t small_free_locked(uintptr_t a, uint64_t now)
{
	struct sblk *b = stab_find(a);
	size_t pinned = 0;
	if (!b)
		return 0;
	if (b->kind & SBLK_PINNED) {
		pinned = b->size;
		pinned_live--;
	} else {
		struct nk__nkp_block e = { .addr = a, .time_ns = now ? now : nkp_now(), .tid = nkp_tid() };
		sbuf_put(&e);
		small_frees++;
	}
	stab_delete(b);
	atomic_fetch_sub(&n_small, 1);
	return pinned;
}

/* Insert a block into the set (its stale entry, a free not seen, dropped first).  nkp_blk_lock held.  -1 when
 * the set cannot grow; *unpin: the size of a stale pinned entry at the same address (its pages to unpin). */
static int stab_put(const struct sblk *nb, size_t *unpin)
{
	struct sblk *b = stab_find(nb->addr);
	*unpin = 0;
	if (b) { /* its free was not seen (freed behind our back) */
		if (b->kind & SBLK_PINNED) {
			*unpin = b->size;
			pinned_live--;
		}
		stab_delete(b);
		atomic_fetch_sub(&n_small, 1);
	}
	if ((stab_n + 1) * 2 > stab_cap && stab_grow())
		return -1;
	size_t i = stab_hash(nb->addr, stab_cap);
	while (stab[i].addr)
		i = (i + 1) & (stab_cap - 1);
	stab[i] = *nb;
	stab_n++;
	atomic_fetch_add(&n_small, 1);
	return 0;
}

static void pin_span(uintptr_t a, size_t n, int pin)
{
	if (!n || nkp.sampler != NK__SAMPLER_PAGEFAULT)
		return;
	if (pin && nkp_pf_pin)
		nkp_pf_pin(a, a + n);
	else if (!pin && nkp_pf_unpin)
		nkp_pf_unpin(a, a + n);
}

void nkp_small_here(void *p, size_t n, uint32_t kind)
{
	uint64_t t_in = self_begin();
	STACK(fr, nfr);
	uintptr_t a = (uintptr_t)p, ps = (uintptr_t)nkp.page_size, nlo = 0, nhi = 0;
	int skip = 0, arm = 0, pin = 0;
	size_t unpin = 0;
	nkp_enter();
	pthread_mutex_lock(&nkp_blk_lock);
	uint32_t site = nkp_site_of(fr, nfr, &skip);
	if (!site)
		goto out;
	struct sblk nb = { .addr = a, .size = (uint32_t)n, .site = site, .time_ns = t_in ? t_in : nkp_now(),
			   .tid = nkp_tid(), .kind = kind };
	if (skip) { /* someone else's block: pinned, not recorded */
		nb.kind |= SBLK_PINNED;
		if (stab_put(&nb, &unpin) == 0) {
			pinned_live++;
			pinned_allocs++;
			pin = 1;
		}
		goto out;
	}
	if (stab_put(&nb, &unpin))
		goto out;
	small_allocs++;
	struct nk__nkp_block e = { .addr = a, .time_ns = nb.time_ns, .size = nb.size, .site = site, .tid = nb.tid,
				   .kind = (uint16_t)kind };
	sbuf_put(&e);
	arm = nkp_heap_cover(a & ~(ps - 1), (a + n + ps - 1) & ~(ps - 1), &nlo, &nhi) && nlo < nhi &&
	      nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_new_block;
out:
	pthread_mutex_unlock(&nkp_blk_lock);
	nkp_leave();
	pin_span(a, unpin, 0);
	if (pin)
		pin_span(a, n, 1);
	if (arm) /* the new pages, like a new block: their first touch may be sampled */
		nkp_pf_new_block(nlo, nhi - nlo);
	self_end(t_in);
}

/* free()/realloc() of @p p: 1 when it was a recorded small block (now forgotten). */
void nkp_maybe_small_free(void *p)
{
	if (!p || !nkp.active || !atomic_load_explicit(&n_small, memory_order_relaxed) || nkp_busy())
		return;
	uint64_t t_in = self_begin();
	nkp_enter();
	pthread_mutex_lock(&nkp_blk_lock);
	size_t unpin = small_free_locked((uintptr_t)p, t_in);
	pthread_mutex_unlock(&nkp_blk_lock);
	nkp_leave();
	pin_span((uintptr_t)p, unpin, 0);
	self_end(t_in);
}

int nkp_want_small(size_t n)
{
	return nkp.small_blocks && n && n < nkp.min_size && n <= UINT32_MAX && nkp.active && !nkp_busy();
}

void nkp_alloc_flush(int from_signal)
{
	if (!nkp.active)
		return;
	if (from_signal) {
		if (pthread_mutex_trylock(&nkp_blk_lock))
			return;
	} else {
		pthread_mutex_lock(&nkp_blk_lock);
	}
	sbuf_flush_locked();
	pthread_mutex_unlock(&nkp_blk_lock);
}

/* AS-safe (END may be written from a fatal signal's handler): no stdio. */
static char *put_u64(char *p, uint64_t v)
{
	char d[24];
	int k = 0;
	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (k)
		*p++ = d[--k];
	return p;
}

size_t nkp_alloc_end_json(char *buf, size_t cap)
{
	static const char *const key[] = { "\"small_blocks\": {\"allocs\": ", ", \"frees\": ", ", \"live\": ",
					   ", \"lost\": ", ", \"pinned\": " };
	const uint64_t v[] = { small_allocs, small_frees, stab_n - pinned_live, small_lost, pinned_allocs };
	if (cap < 200)
		return 0;
	char *p = buf;
	for (size_t i = 0; i < 5; i++) {
		size_t l = strlen(key[i]);
		memcpy(p, key[i], l);
		p = put_u64(p + l, v[i]);
	}
	*p++ = '}';
	return (size_t)(p - buf);
}


/* ---------------------------------------------------------------- fork */

void nkp_blocks_fork_child(void)
{
	sbuf_n = 0; /* the parent's events: its own part gets them */
	small_allocs = small_frees = small_lost = pinned_allocs = 0;
}

void nkp_blocks_replay_locked(void)
{
	for (size_t i = 0; i < stab_cap; i++) { /* the live small blocks, born at time 0 of this part */
		const struct sblk *b = &stab[i];
		if (!b->addr || (b->kind & SBLK_PINNED))
			continue;
		nkp_site_write_id(b->site);
		struct nk__nkp_block e = { .addr = b->addr, .size = b->size, .site = b->site, .tid = b->tid,
					   .kind = (uint16_t)b->kind };
		sbuf_put(&e);
	}
	sbuf_flush_locked();
}
