/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so site matching (advice_rt.h): which key group a call stack is.  Owns the table of loaded
 * objects (dl_iterate_phdr; scanned again after a dlopen) and its lock, the caller's return address that rules
 * every heap key out without unwinding, the unwinding itself with its per-thread memo of the last answers, and
 * the caller filter of small allocations.  Of the plan it sees only the key groups, through runtime.c's
 * accessors (nkpl_num_groups, nkpl_group_key, nkpl_group_heap, nkpl_group_blocks); runtime.c reaches the
 * objects only through nkpl_objs_rescan and nkpl_obj_named.
 */
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "advice_rt.h"

static pthread_mutex_t obj_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- loaded objects */

#define MAX_OBJS 512
static struct nkpl_obj objs[MAX_OBJS];
static char obj_names[MAX_OBJS][256];
static char obj_paths[MAX_OBJS][PATH_MAX];
static size_t n_objs;

static int objs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	char path[PATH_MAX];
	const char *name = info->dlpi_name;
	if (n_objs >= MAX_OBJS)
		return 1;
	if (!name || !*name) {
		/* the main program (or the vdso, which has a name): its real file, as /proc/PID/maps shows it */
		ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
		if (k <= 0 || n_objs) /* only the first unnamed object is the program */
			return 0;
		path[k] = 0;
	} else if (!realpath(name, path)) {
		return 0; /* no file (the vdso): its frames are not in a file mapping either */
	}
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		if (a < lo)
			lo = a;
		if (b > hi)
			hi = b;
	}
	if (lo >= hi)
		return 0;
	struct nkpl_obj *o = &objs[n_objs];
	snprintf(obj_paths[n_objs], sizeof obj_paths[0], "%s", path);
	snprintf(obj_names[n_objs], sizeof obj_names[0], "%s", nkpl_basename(path));
	o->name = obj_names[n_objs];
	o->bias = info->dlpi_addr;
	o->lo = lo;
	o->hi = hi;
	o->runtime = nkpl_is_runtime_name(o->name);
	n_objs++;
	return 0;
}

static atomic_int objs_dirty;
static atomic_uint objs_gen; /* bumped at every scan of the objects (nkpl_site_group's memo) */

/* obj_lock held. */
static void scan_objects(void)
{
	n_objs = 0;
	dl_iterate_phdr(objs_cb, NULL);
	atomic_fetch_add(&objs_gen, 1);
}

/*
 * 1 when the caller's return address @p ra rules every heap key out: it lies in one of the
 * program's objects (not a runtime's) and no key starts with its frame.  obj_lock held.
 */
static int ruled_out(uintptr_t ra)
{
	char first[NKPL_KEY_MAX];
	const struct nkpl_obj *o = ra > 1 ? nkpl_obj_of(objs, n_objs, ra - 1) : NULL;
	if (!o || o->runtime)
		return 0; /* unknown, or called through the profiler's interposer: unwind */
	int k = snprintf(first, sizeof first, "heap:%s+0x%llx", o->name, (unsigned long long)(ra - 1 - o->bias));
	if (k < 0 || (size_t)k >= sizeof first)
		return 0;
	for (size_t g = 0, ng = nkpl_num_groups(); g < ng; g++) {
		const char *key = nkpl_group_key((int)g);
		if (nkpl_group_heap((int)g) && !strncmp(key, first, (size_t)k) && (key[k] == ';' || !key[k]))
			return 0;
	}
	return 1;
}

/*
 * The caller filter of small allocations (nkpl_small_candidate): the return addresses that start the key of a site
 * of small blocks, and the runtimes' code (under the profiler the caller is its interposer).  Rewritten under
 * obj_lock whenever the objects are scanned, read without a lock by every malloc under a page: a reader racing a
 * rewrite may unwind once for nothing or miss one block, never more.
 */
#define SMALL_RAS 64
#define SMALL_RT 8
static uintptr_t small_ras[SMALL_RAS];
static atomic_size_t n_small_ras;
static uintptr_t small_rt[SMALL_RT][2];
static atomic_size_t n_small_rt;
size_t nkpl_small_n; /* n_small_ras + n_small_rt, for the inline test */

int nkpl_small_lookup(uintptr_t ra)
{
	size_t n = atomic_load_explicit(&n_small_ras, memory_order_acquire);
	for (size_t i = 0; i < n; i++)
		if (small_ras[i] == ra)
			return 1;
	n = atomic_load_explicit(&n_small_rt, memory_order_acquire);
	for (size_t i = 0; i < n; i++)
		if (ra >= small_rt[i][0] && ra < small_rt[i][1])
			return 1;
	return 0;
}

/* obj_lock held, objects scanned. */
static void small_filter_update(void)
{
	size_t k = 0, r = 0;
	int any = 0;
	for (size_t g = 0, ng = nkpl_num_groups(); g < ng; g++) {
		char obj[256];
		uint64_t off;
		if (!nkpl_group_blocks((int)g) || nkpl_key_first_frame(nkpl_group_key((int)g), obj, sizeof obj, &off))
			continue;
		any = 1;
		for (size_t i = 0; i < n_objs && k < SMALL_RAS; i++) {
			uintptr_t ra = objs[i].bias + (uintptr_t)off + 1;
			if (!objs[i].runtime && !strcmp(objs[i].name, obj) && ra > objs[i].lo && ra <= objs[i].hi)
				small_ras[k++] = ra;
		}
	}
	uintptr_t self = (uintptr_t)&nkpl_small_lookup; /* this runtime calls malloc only inside nkpl_enter() */
	for (size_t i = 0; any && i < n_objs && r < SMALL_RT; i++)
		if (objs[i].runtime && !(self >= objs[i].lo && self < objs[i].hi)) {
			small_rt[r][0] = objs[i].lo + 1; /* ra - 1 inside, as nkpl_site_group locates it */
			small_rt[r][1] = objs[i].hi + 1;
			r++;
		}
	atomic_store_explicit(&n_small_ras, k, memory_order_release);
	atomic_store_explicit(&n_small_rt, r, memory_order_release);
	__atomic_store_n(&nkpl_small_n, k + r, __ATOMIC_RELEASE);
}

int nkpl_in_runtime(uintptr_t ra)
{
	pthread_mutex_lock(&obj_lock);
	const struct nkpl_obj *o = ra > 1 ? nkpl_obj_of(objs, n_objs, ra - 1) : NULL;
	int r = o && o->runtime;
	pthread_mutex_unlock(&obj_lock);
	return r;
}

/*
 * The call stack, with each frame's CFA (for the memo below): _Unwind_Backtrace, as backtrace() is built on it
 * (the same return addresses), stopping 12 frames past the one returning to @p ra.
 */
#define UW_MAX 40
struct unwound {
	uintptr_t ip[UW_MAX], cfa[UW_MAX];
	int n, at_ra; /* frames; the index of the frame whose ip is ra, -1 none */
	uintptr_t ra;
};

static _Unwind_Reason_Code unwind_cb(struct _Unwind_Context *c, void *arg)
{
	struct unwound *u = arg;
	uintptr_t ip = (uintptr_t)_Unwind_GetIP(c);
	if (u->n >= UW_MAX || !ip || (u->at_ra >= 0 && u->n >= u->at_ra + 12))
		return _URC_END_OF_STACK;
	u->ip[u->n] = ip;
	u->cfa[u->n] = (uintptr_t)_Unwind_GetCFA(c);
	if (ip == u->ra && u->at_ra < 0)
		u->at_ra = u->n;
	u->n++;
	return _URC_NO_REASON;
}

#if defined(__x86_64__)
/*
 * A per-thread memo of the last answers, so that a site allocating in a loop is unwound once, not per block
 * (unwinding costs about 1.5 us; a site of small blocks asks at every block).  Keyed by the interposer's return
 * address and CFA; valid while the return addresses on the stack that made the key are still there (x86-64:
 * return address i at the CFA the unwinder reports with it, minus 8; checked when the memo is made): given the
 * first frame and the stack pointer, each following return address sits at a place fixed by the frame before
 * it, so equal values at those places are the same call path.
 * Why reading those places is safe: the first lies in the frame of the function that called the interposer
 * (active: it is the same function at the same stack pointer), and each following one in the frame of the
 * function the previous match showed active, so every read is inside the current call chain.  A frame of
 * variable size (alloca) could leave an old value at an old place and match by accident: the answer is then
 * that of the old path (one block served or not, the program sees no difference), and the place read is still
 * below this thread's first frame, on its stack.  Only a thread that also moves to another stack mapped at the
 * same addresses (coroutines) could read past it.  No lock, no call: pthread_getattr_np, for one, allocates
 * under a lock of its own (the profiler calls it, and its calloc comes here).
 */
#define MEMO_WAYS 4
#define MEMO_SLOTS 8
#define MEMO_REACH (1u << 20) /* the places read lie at most this far above the interposer's CFA */
struct memo {
	uintptr_t ra, cfa;
	unsigned gen;
	int n, group;
	uintptr_t slot[MEMO_SLOTS], val[MEMO_SLOTS];
};
static __thread struct memo memo[MEMO_WAYS] __attribute__((tls_model("initial-exec")));

static struct memo *memo_of(uintptr_t ra, uintptr_t cfa)
{
	return &memo[((ra >> 2) ^ (cfa >> 4)) % MEMO_WAYS];
}

static int memo_get(uintptr_t ra, uintptr_t cfa, int *group)
{
	struct memo *m = memo_of(ra, cfa);
	if (!cfa || m->ra != ra || m->cfa != cfa || m->gen != atomic_load_explicit(&objs_gen, memory_order_relaxed) ||
	    atomic_load_explicit(&objs_dirty, memory_order_relaxed))
		return 0;
	for (int k = 0; k < m->n; k++)
		if (*(const volatile uintptr_t *)m->slot[k] != m->val[k])
			return 0;
	*group = m->group;
	return 1;
}

/* Remember the answer @p group for the stack @p u whose key ended at frame @p last. */
static void memo_put(uintptr_t ra, uintptr_t cfa, const struct unwound *u, int last, unsigned gen, int group)
{
	struct memo *m = memo_of(ra, cfa);
	if (!cfa || u->at_ra < 0 || last <= u->at_ra || last - u->at_ra > MEMO_SLOTS)
		return;
	m->ra = 0; /* a signal handler's malloc meanwhile sees no entry */
	__asm__ volatile("" ::: "memory");
	m->n = 0;
	for (int i = u->at_ra + 1; i <= last; i++) {
		uintptr_t slot = u->cfa[i] - sizeof(uintptr_t);
		if (slot < cfa || slot - cfa >= MEMO_REACH || (m->n && slot <= m->slot[m->n - 1]) ||
		    *(const uintptr_t *)slot != u->ip[i])
			return; /* not where the return address should be: no memo */
		m->slot[m->n] = slot;
		m->val[m->n] = u->ip[i];
		m->n++;
	}
	m->cfa = cfa;
	m->gen = gen;
	m->group = group;
	__asm__ volatile("" ::: "memory");
	m->ra = ra;
}
#else
static int memo_get(uintptr_t ra, uintptr_t cfa, int *group)
{
	return 0;
}
static void memo_put(uintptr_t ra, uintptr_t cfa, const struct unwound *u, int last, unsigned gen, int group)
{
}
#endif

int nkpl_site_group(uintptr_t ra, uintptr_t cfa)
{
	struct unwound u;
	char key[NKPL_KEY_MAX];
	int g = -1, last = -1;

	if (memo_get(ra, cfa, &g))
		return g;
	pthread_mutex_lock(&obj_lock);
	if (atomic_exchange(&objs_dirty, 0)) {
		scan_objects();
		small_filter_update();
	}
	if (ruled_out(ra)) {
		pthread_mutex_unlock(&obj_lock);
		return -1;
	}
	pthread_mutex_unlock(&obj_lock);
	u.n = 0;
	u.at_ra = -1;
	u.ra = ra;
	_Unwind_Backtrace(unwind_cb, &u);
	pthread_mutex_lock(&obj_lock);
	unsigned gen = atomic_load(&objs_gen);
	int frames = nkpl_key_format(u.ip, (size_t)u.n, objs, n_objs, key, sizeof key);
	/* the frame that gave the key its last frame (as nkpl_key_format counts) */
	for (int i = 0, k = 0; i < u.n && k < frames; i++) {
		const struct nkpl_obj *o = u.ip[i] > 1 ? nkpl_obj_of(objs, n_objs, u.ip[i] - 1) : NULL;
		if (o && !o->runtime && ++k == frames)
			last = i;
	}
	pthread_mutex_unlock(&obj_lock);
	if (!frames)
		return -1;
	for (size_t i = 0, ng = nkpl_num_groups(); i < ng; i++)
		if (nkpl_group_heap((int)i) && !strcmp(nkpl_group_key((int)i), key)) {
			g = (int)i;
			break;
		}
	/* a key of fewer frames ended with the stack (or where unwinding stopped): not memoised */
	if (frames == NKPL_KEY_FRAMES)
		memo_put(ra, cfa, &u, last, gen, g);
	return g;
}

/* ---------------------------------------------------------------- runtime.c's side: dlopen, statics, start, fork */

void nkpl_objs_changed(void)
{
	atomic_store(&objs_dirty, 1);
}

void nkpl_objs_rescan(void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&obj_lock);
	scan_objects();
	small_filter_update();
	if (fn)
		fn(arg);
	pthread_mutex_unlock(&obj_lock);
}

const struct nkpl_obj *nkpl_obj_named(const char *name, size_t len, const char **path)
{
	for (size_t i = 0; i < n_objs; i++)
		if (strlen(objs[i].name) == len && !strncmp(objs[i].name, name, len)) {
			*path = obj_paths[i];
			return &objs[i];
		}
	return NULL;
}

void nkpl_site_start(void)
{
	struct unwound u = { .n = 0, .at_ra = -1 };
	_Unwind_Backtrace(unwind_cb, &u); /* the unwinder's first use, here rather than in a malloc */
}

void nkpl_site_fork_prepare(void)
{
	pthread_mutex_lock(&obj_lock);
}

void nkpl_site_fork_parent(void)
{
	pthread_mutex_unlock(&obj_lock);
}

void nkpl_site_fork_child(void)
{
	pthread_mutex_init(&obj_lock, NULL);
}
