/* SPDX-License-Identifier: BSD-3-Clause
 * The fatal signals: the dispatcher installed for them (the pagefault sampler's SIGSEGV first, then the
 * program's handler as it asked for it), their default action with the part ended first, and the
 * sigaction()/signal() interposers that keep the program's view.  It must stay AS-safe on the dispatcher
 * path; the other files install no handler of their own (their sigaction() calls come through here).
 *
 * SIGSEGV is never really blocked in the program's threads while the pagefault sampler runs: a synchronous
 * fault with SIGSEGV blocked is not delivered, the kernel kills the process, and any access to a page the
 * sampler revoked is such a fault (threads that block every signal, a handler whose sa_mask holds SIGSEGV,
 * the program's own SIGSEGV handler touching a revoked static: pf_prog's segv scenario died in siglongjmp's
 * PLT entry).  The program's view is kept instead: sigprocmask/pthread_sigmask and sa_mask are passed on
 * without SIGSEGV and report it back as the program set it (segv_view, per thread), and a SIGSEGV that is
 * not the sampler's while the program's view has it blocked does what the kernel would have done: the
 * default action.  An asynchronous SIGSEGV (kill) then acts at once instead of staying pending.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "prof.h"
#include "runtime_impl.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static int sys_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	REAL(sigaction_fn, sigaction);
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction(sig, sa, old);
}

/* 1 while the pagefault sampler may revoke pages: SIGSEGV is then kept unblocked (the header comment). */
static int keep_segv(void)
{
	return nkp.active && nkp.sampler == NK__SAMPLER_PAGEFAULT;
}

typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

/* The real pthread_sigmask (errno-style return: 0 or an error number). */
static int sys_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(sigmask_fn, pthread_sigmask);
	if (!real_pthread_sigmask)
		return ENOSYS;
	return real_pthread_sigmask(how, set, old);
}

/* pthread_sigmask/sigprocmask: SIGSEGV kept out of the real mask while the sampler may revoke pages, the
 * program's view in nkp_segv_view.  Returns what @p fn returns. */
static int masked_call(sigmask_fn fn, int how, const sigset_t *set, sigset_t *old)
{
	if (!fn)
		return ENOSYS;
	if (!keep_segv())
		return fn(how, set, old);
	int view = nkp_segv_view, next = view;
	sigset_t mine;
	const sigset_t *use = set;
	if (set) {
		int has = sigismember(set, SIGSEGV) == 1;
		if (how == SIG_BLOCK && has)
			next = 1;
		else if (how == SIG_UNBLOCK && has)
			next = 0;
		else if (how == SIG_SETMASK)
			next = has;
		if (has && how != SIG_UNBLOCK) {
			mine = *set;
			sigdelset(&mine, SIGSEGV);
			use = &mine;
		}
	}
	int rc = fn(how, use, old);
	if (rc == 0) {
		if (old && view)
			sigaddset(old, SIGSEGV);
		nkp_segv_view = next;
	}
	return rc;
}

NKP_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(sigmask_fn, pthread_sigmask);
	return masked_call(real_pthread_sigmask, how, set, old);
}

NKP_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(sigmask_fn, sigprocmask);
	return masked_call(real_sigprocmask, how, set, old);
}

/*
 * A jump out of a handler (the usual way out of a SIGSEGV handler) leaves the view of the handler's mask
 * behind: the jump restores a mask from before it, where SIGSEGV is taken to be unblocked.  The real
 * functions are looked up at start (nkp_signals_install): a jump runs in a signal handler, dlsym may not.
 */
typedef void (*jump_fn)(struct __jmp_buf_tag *, int);
static jump_fn real_jump[4];
static const char *const jump_name[4] = { "longjmp", "_longjmp", "siglongjmp", "__longjmp_chk" };

static __attribute__((noreturn)) void jump(int k, struct __jmp_buf_tag *env, int val)
{
	nkp_segv_view = 0;
	if (!real_jump[k])
		real_jump[k] = (jump_fn)nkp_real(jump_name[k]);
	real_jump[k](env, val);
	__builtin_unreachable();
}

NKP_EXPORT void longjmp(jmp_buf env, int val)
{
	jump(0, env, val);
}

NKP_EXPORT void _longjmp(jmp_buf env, int val)
{
	jump(1, env, val);
}

NKP_EXPORT void siglongjmp(sigjmp_buf env, int val)
{
	jump(2, env, val);
}

void __longjmp_chk(struct __jmp_buf_tag *env, int val);
NKP_EXPORT void __longjmp_chk(struct __jmp_buf_tag *env, int val)
{
	jump(3, env, val);
}

static const int fatal_sigs[] = { SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGSEGV };
#define NSIG_TAB 65
static struct sigaction prog_sa[NSIG_TAB]; /* the program's view of our signals */
static unsigned char mask_segv[NSIG_TAB];  /* the program's sa_mask of a signal not ours held SIGSEGV */
/* The program's view of SIGSEGV in this thread's mask (1 blocked) while we keep it unblocked for the
 * sampler; a new thread inherits its creator's (process.c). */
TLS NKP_HIDDEN int nkp_segv_view;
static unsigned char owned[NSIG_TAB];      /* 1: our dispatcher is installed for it */
static atomic_int sig_lock;

static void dispatcher(int sig, siginfo_t *info, void *uctx);

static int is_sync_fault(int sig, const siginfo_t *info)
{
	return (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && info && info->si_code > 0;
}

static void install_ours(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = dispatcher;
	/* The program's flags and mask, our SA_SIGINFO; SA_RESETHAND is done by the dispatcher. */
	sa.sa_flags = (prog_sa[sig].sa_flags & ~(SA_RESETHAND | SA_SIGINFO)) | SA_SIGINFO | SA_ONSTACK;
	if (prog_sa[sig].sa_handler == SIG_DFL || prog_sa[sig].sa_handler == SIG_IGN)
		sa.sa_flags |= SA_RESTART;
	sa.sa_mask = prog_sa[sig].sa_mask;
	sigdelset(&sa.sa_mask, SIGSEGV); /* the dispatcher blocks it for the program's handler (in its view) */
	(void)sys_sigaction(sig, &sa, NULL);
}

/* Fatal default action: flush the part AS-safely, END how=signal, die by @p sig. */
static void die_by(int sig, siginfo_t *info)
{
	if (nkp.active && nkp.sampler == NK__SAMPLER_TRACE && nkp_trace_stop)
		nkp_trace_stop(); /* AS-safe: emits the first touches still pending */
	if (nkp.active && nkp_mine() && !atomic_load(&nkp_closed))
		nkp_alloc_flush(1);
	if (nkp.active && nkp_mine() && !atomic_load(&nkp_closed))
		nkp_part_end_async("signal", 128 + sig, sig);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	(void)sys_sigaction(sig, &dfl, NULL);
	owned[sig] = 0;
	if (!is_sync_fault(sig, info)) {
		sigset_t u;
		sigemptyset(&u);
		sigaddset(&u, sig);
		raise(sig);
		sys_sigmask(SIG_UNBLOCK, &u, NULL);
	}
	/* A real fault re-executes the instruction on return and dies with the default action. */
}

static void dispatcher(int sig, siginfo_t *info, void *uctx)
{
	int saved = errno;
	if (sig == SIGSEGV && nkp.sampler == NK__SAMPLER_PAGEFAULT && nkp_pf_fault && nkp_pf_fault(sig, info, uctx)) {
		errno = saved;
		return;
	}
	if (sig == SIGSEGV && nkp_segv_view && keep_segv()) {
		/* The program has SIGSEGV blocked: the kernel would have killed it. */
		die_by(sig, info);
		errno = saved;
		return;
	}
	struct sigaction p = prog_sa[sig];
	if (!(p.sa_flags & SA_SIGINFO) && p.sa_handler == SIG_IGN && !is_sync_fault(sig, info)) {
		errno = saved;
		return;
	}
	if (!(p.sa_flags & SA_SIGINFO) && (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN)) {
		die_by(sig, info);
		errno = saved;
		return;
	}
	if (p.sa_flags & SA_RESETHAND) {
		memset(&prog_sa[sig], 0, sizeof prog_sa[sig]);
		prog_sa[sig].sa_handler = SIG_DFL;
	}
	sigset_t old;
	int masked = sys_sigmask(SIG_BLOCK, &p.sa_mask, &old) == 0;
	if (p.sa_flags & SA_NODEFER) {
		sigset_t u;
		sigemptyset(&u);
		sigaddset(&u, sig);
		sys_sigmask(SIG_UNBLOCK, &u, NULL);
	}
	/* SIGSEGV blocked for the program's handler (the kernel blocked it for us, or its sa_mask): unblocked,
	 * the program's view says blocked. */
	int view = nkp_segv_view;
	if (keep_segv() && ((sig == SIGSEGV && !(p.sa_flags & SA_NODEFER)) || sigismember(&p.sa_mask, SIGSEGV) == 1)) {
		sigset_t u;
		sigemptyset(&u);
		sigaddset(&u, SIGSEGV);
		sys_sigmask(SIG_UNBLOCK, &u, NULL);
		nkp_segv_view = 1;
	}
	errno = saved;
	if (p.sa_flags & SA_SIGINFO)
		p.sa_sigaction(sig, info, uctx);
	else
		p.sa_handler(sig);
	saved = errno;
	nkp_segv_view = view;
	if (masked)
		sys_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
}

static int owned_sig(int sig)
{
	return nkp.active && sig > 0 && sig < NSIG_TAB && owned[sig];
}

NKP_EXPORT int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (!owned_sig(sig)) {
		/* Not ours: passed on, but with SIGSEGV out of its mask while the sampler may revoke pages (a
		 * fault in that handler would kill); the program still reads back the mask it gave. */
		if (!nkp.active || sig <= 0 || sig >= NSIG_TAB)
			return sys_sigaction(sig, sa, old);
		struct sigaction mine;
		int had = mask_segv[sig], strip = sa && keep_segv() && sigismember(&sa->sa_mask, SIGSEGV) == 1;
		if (strip) {
			mine = *sa;
			sigdelset(&mine.sa_mask, SIGSEGV);
		}
		int rc = sys_sigaction(sig, strip ? &mine : sa, old);
		if (rc == 0 && old && had)
			sigaddset(&old->sa_mask, SIGSEGV);
		if (rc == 0 && sa)
			mask_segv[sig] = (unsigned char)strip;
		return rc;
	}
	/* Signals blocked while the table changes: a handler calling sigaction() must not spin on our lock. */
	sigset_t all, saved;
	sigfillset(&all);
	sys_sigmask(SIG_BLOCK, &all, &saved);
	int z = 0;
	while (!atomic_compare_exchange_weak(&sig_lock, &z, 1)) {
		z = 0;
		sched_yield();
	}
	if (old)
		*old = prog_sa[sig];
	if (sa) {
		prog_sa[sig] = *sa;
		install_ours(sig);
	}
	atomic_store(&sig_lock, 0);
	sys_sigmask(SIG_SETMASK, &saved, NULL);
	return 0;
}

NKP_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART; /* glibc's BSD semantics */
	sigemptyset(&sa.sa_mask);
	if (sig > 0 && sig < NSIG_TAB)
		sigaddset(&sa.sa_mask, sig);
	if (sigaction(sig, &sa, &old))
		return SIG_ERR;
	return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}

void nkp_signals_install(void)
{
	for (int k = 0; k < 4; k++)
		if (!real_jump[k])
			real_jump[k] = (jump_fn)nkp_real(jump_name[k]);
	(void)sys_sigmask(SIG_BLOCK, NULL, NULL); /* resolves the real pthread_sigmask, as the jumps */
	for (size_t i = 0; i < sizeof fatal_sigs / sizeof fatal_sigs[0]; i++) {
		int sig = fatal_sigs[i];
		if (sys_sigaction(sig, NULL, &prog_sa[sig]))
			continue;
		owned[sig] = 1;
		install_ours(sig);
	}
}

void nkp_signals_after_fork(void)
{
	atomic_store(&sig_lock, 0); /* a thread of the parent may have held it */
}
