/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_prof.so's allocation sites (split from alloc.c, issue 15): call stacks by id, their SITE
 * records, the runtime's own object and the objects whose small blocks are skipped.  Everything here runs
 * under nkp_blk_lock (taken by the callers): it takes no lock itself (nkp_record takes the writer lock),
 * must not allocate from the heap, and must not include ../common/interpose.h.
 */
#include <link.h>
#include <stdint.h>

#include "alloc_impl.h"
#include "prof.h"

struct site nkp_sites[SITE_CAP];
static uint32_t n_sites;
uintptr_t nkp_self_lo, nkp_self_hi; /* the runtime's own object */

/*
 * Objects whose own small allocations are not recorded (the caller of malloc is one of them): the loader,
 * threading and OpenMP runtimes, numakit's libraries.  Their blocks hold locks and barriers that the kernel
 * reads in futex calls, which a revoked page would fail with EFAULT; and they are nobody's data.  Filled by
 * alloc.c's statics_cb (start and every dlopen); read by nkp_site_of, under nkp_blk_lock.
 */
struct nkp_skip_obj nkp_skip_obj[SKIP_CAP];
size_t nkp_n_skip_obj;

static int skip_caller(uintptr_t ip)
{
	for (size_t i = 0; i < nkp_n_skip_obj; i++)
		if (ip >= nkp_skip_obj[i].lo && ip < nkp_skip_obj[i].hi)
			return 1;
	return 0;
}

int nkp_find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t probe = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (probe >= lo && probe < hi) {
			uintptr_t a = UINTPTR_MAX, b = 0;
			for (int j = 0; j < info->dlpi_phnum; j++) {
				const ElfW(Phdr) *q = &info->dlpi_phdr[j];
				if (q->p_type != PT_LOAD)
					continue;
				uintptr_t l = info->dlpi_addr + q->p_vaddr;
				if (l < a)
					a = l;
				if (l + q->p_memsz > b)
					b = l + q->p_memsz;
			}
			nkp_self_lo = a;
			nkp_self_hi = b;
			return 1;
		}
	}
	return 0;
}

/* The SITE record of @p s, unless this part has it already.  nkp_blk_lock held. */
static void site_write(struct site *s)
{
	if (s->written)
		return;
	struct nk__nkp_site r = { .id = s->id, .depth = s->depth };
	if (!nkp_record(NK__NKP_SITE, &r, sizeof r, s->ip, s->depth * sizeof s->ip[0]))
		s->written = 1;
}

void nkp_site_write_id(uint32_t id)
{
	for (size_t j = 0; id && j < SITE_CAP; j++)
		if (nkp_sites[j].id == id) {
			site_write(&nkp_sites[j]);
			return;
		}
}

/* Site id of the current call stack (without the runtime's frames); writes SITE when new; *skip (may be NULL)
 * tells whether the site's small blocks are left out (skip_caller).  nkp_blk_lock held. */
uint32_t nkp_site_of(void *const *fr, int n, int *skip)
{
	/* Drop the runtime's frames: the interposers on top, and the main() wrapper further down. */
	void *own[NK__NKP_MAX_DEPTH];
	uint32_t depth = 0;
	for (int i = 0; i < n && depth < NK__NKP_MAX_DEPTH; i++)
		if ((uintptr_t)fr[i] < nkp_self_lo || (uintptr_t)fr[i] >= nkp_self_hi)
			own[depth++] = fr[i];
	if (!depth)
		return 0;
	fr = own;
	const int k = 0;
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < depth; i++) {
		h ^= (uint64_t)(uintptr_t)fr[k + i];
		h *= 1099511628211ull;
	}
	size_t slot = h & (SITE_CAP - 1);
	for (size_t probe = 0; probe < SITE_CAP; probe++, slot = (slot + 1) & (SITE_CAP - 1)) {
		struct site *s = &nkp_sites[slot];
		if (!s->id) {
			if (n_sites >= SITE_CAP * 3 / 4)
				return 0;
			s->hash = h;
			s->depth = depth;
			for (uint32_t i = 0; i < depth; i++)
				s->ip[i] = (uint64_t)(uintptr_t)fr[k + i];
			s->skip = skip_caller((uintptr_t)fr[k]);
			s->id = ++n_sites;
		} else if (s->hash != h || s->depth != depth) {
			continue;
		} else {
			int same = 1;
			for (uint32_t i = 0; i < depth && same; i++)
				same = s->ip[i] == (uint64_t)(uintptr_t)fr[k + i];
			if (!same)
				continue;
		}
		site_write(s);
		if (skip)
			*skip = s->skip;
		return s->id;
	}
	return 0;
}
