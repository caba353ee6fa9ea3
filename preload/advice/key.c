/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so pure logic (advice_rt.h): heap keys and page arithmetic, the page of a site's array
 * an arena page stands for (layout blocks).  No system calls, no allocation: unit-tested on synthetic objects.
 *
 * The heap key must be byte for byte the one the analysis wrote from the
 * profile (src/profile/analysis.c site_var): the analysis locates
 * ip - 1 of each recorded return address in /proc/PID/maps, takes the
 * mapping's file basename and ip - 1 - bias (symbols.c: run-time = link-time
 * + bias; dl_iterate_phdr's dlpi_addr is that bias, 0 for a non-PIE
 * executable), skips frames of no file and keeps the first four.  The
 * profiler recorded the stack without its own frames; we drop ours and the
 * profiler's (both libnumakit_*.so*) when running together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advice_rt.h"

int nkpl_is_runtime_name(const char *base)
{
	return base && !strncmp(base, "libnumakit_", 11) && strstr(base, ".so") != NULL;
}

const char *nkpl_basename(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : (path ? path : "");
}

const struct nkpl_obj *nkpl_obj_of(const struct nkpl_obj *objs, size_t n, uintptr_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (addr >= objs[i].lo && addr < objs[i].hi)
			return &objs[i];
	return NULL;
}

int nkpl_key_format(const uintptr_t *ips, size_t n, const struct nkpl_obj *objs, size_t nobj, char *buf, size_t cap)
{
	int frames = 0;
	size_t kl;

	if (!buf || cap < 8)
		return 0;
	kl = (size_t)snprintf(buf, cap, "heap:");
	for (size_t i = 0; i < n && frames < NKPL_KEY_FRAMES; i++) {
		uintptr_t ip = ips[i] ? ips[i] - 1 : 0; /* return address: the call is before it */
		const struct nkpl_obj *o = ip ? nkpl_obj_of(objs, nobj, ip) : NULL;
		if (!o || o->runtime)
			continue;
		int k = snprintf(buf + kl, cap - kl, "%s%s+0x%llx", frames ? ";" : "", o->name,
				 (unsigned long long)(ip - o->bias));
		if (k < 0 || (size_t)k >= cap - kl) {
			buf[0] = 0;
			return 0;
		}
		kl += (size_t)k;
		frames++;
	}
	if (!frames)
		buf[0] = 0;
	return frames;
}

void nkpl_inner_pages(uintptr_t addr, uint64_t len, uint64_t ps, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t a = (addr + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
	uintptr_t b = (addr + (uintptr_t)len) & ~((uintptr_t)ps - 1);
	if (a < addr || b < a) /* wrapped, or no whole page */
		b = a;
	*lo = a;
	*hi = b;
}

void nkpl_range_bytes(uintptr_t addr, uint64_t first, uint64_t count, uint64_t eps, uintptr_t plo, uintptr_t phi,
		      uint64_t ps, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t base = addr & ~((uintptr_t)eps - 1); /* page 0 holds the first byte */
	uintptr_t a, b;

	*lo = *hi = 0;
	if (!eps || !ps || !count || first > (UINTPTR_MAX - base) / eps)
		return;
	a = base + (uintptr_t)(first * eps);
	b = count > (UINTPTR_MAX - a) / eps ? UINTPTR_MAX : a + (uintptr_t)(count * eps);
	/* to system pages: every system page the range touches */
	a &= ~((uintptr_t)ps - 1);
	if (b != UINTPTR_MAX && (b & ((uintptr_t)ps - 1)))
		b = (b | ((uintptr_t)ps - 1)) + 1;
	if (a < plo)
		a = plo;
	if (b > phi)
		b = phi;
	if (a >= b)
		return;
	*lo = a;
	*hi = b;
}

int nkpl_sym_matches(const char *sym, const char *want)
{
	size_t n = strlen(want);
	if (strncmp(sym, want, n))
		return 0;
	if (!sym[n])
		return 1;
	/* a static local: "count.1", "buf.lto_priv.0" (the analysis shows DWARF's "count") */
	return sym[n] == '.' && sym[n + 1] >= '0' && sym[n + 1] <= '9' ? 1 : !strncmp(sym + n, ".lto_priv.", 10);
}

int nkpl_key_first_frame(const char *key, char *obj, size_t cap, uint64_t *off)
{
	const char *f, *plus, *end;
	char *stop = NULL;

	if (!key || strncmp(key, "heap:", 5) || !obj || !cap || !off)
		return -1;
	f = key + 5;
	end = strchr(f, ';');
	if (!end)
		end = f + strlen(f);
	/* the last '+' of the frame: an object's name may hold one ("libstdc++.so.6") */
	for (plus = end; plus > f && plus[-1] != '+'; plus--)
		;
	if (plus <= f + 1 || (size_t)(plus - 1 - f) >= cap || strncmp(plus, "0x", 2))
		return -1;
	unsigned long long v = strtoull(plus + 2, &stop, 16);
	if (stop != end || stop == plus + 2)
		return -1;
	memcpy(obj, f, (size_t)(plus - 1 - f));
	obj[plus - 1 - f] = 0;
	*off = v;
	return 0;
}

uint64_t nkpl_site_page(uint64_t pos, uint64_t j, uint64_t ps, double ratio, uint64_t npages)
{
	if (!npages || !ps)
		return 0;
	if (!(ratio > 0)) /* also NaN */
		ratio = 0;
	if (ratio > 1)
		ratio = 1;
	double at = (double)pos + (double)j * (double)ps * ratio;
	double last = (double)(npages - 1);
	double page = at / (double)ps;
	if (page >= last)
		return npages - 1;
	return (uint64_t)page;
}

void nkpl_plan_pages_sys(uint64_t first, uint64_t count, uint64_t eps, uint64_t ps, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (!eps || !ps || !count || first > UINT64_MAX / eps || count > UINT64_MAX / eps - first)
		return;
	uint64_t a = first * eps, b = (first + count) * eps; /* bytes [a, b) of the array */
	*lo = a / ps + (a % ps != 0);                        /* the first system page starting at or after a */
	*hi = b / ps + (b % ps != 0);
	if (*hi < *lo)
		*hi = *lo;
}
