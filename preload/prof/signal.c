/*
 * The fatal signals: the dispatcher installed for them (the pagefault sampler's SIGSEGV first, then the
 * program's handler as it asked for it), their default action with the part ended first, and the
 * sigaction()/signal() interposers that keep the program's view.  It must stay AS-safe on the dispatcher
 * path; the other files install no handler of their own (their sigaction() calls come through here).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

static const int fatal_sigs[] = { SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGSEGV };
#define NSIG_TAB 65
static struct sigaction prog_sa[NSIG_TAB]; /* the program's view of our signals */
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
		pthread_sigmask(SIG_UNBLOCK, &u, NULL);
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
	int masked = pthread_sigmask(SIG_BLOCK, &p.sa_mask, &old) == 0;
	if (p.sa_flags & SA_NODEFER) {
		sigset_t u;
		sigemptyset(&u);
		sigaddset(&u, sig);
		pthread_sigmask(SIG_UNBLOCK, &u, NULL);
	}
	errno = saved;
	if (p.sa_flags & SA_SIGINFO)
		p.sa_sigaction(sig, info, uctx);
	else
		p.sa_handler(sig);
	saved = errno;
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
}

static int owned_sig(int sig)
{
	return nkp.active && sig > 0 && sig < NSIG_TAB && owned[sig];
}

NKP_EXPORT int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (!owned_sig(sig))
		return sys_sigaction(sig, sa, old);
	/* Signals blocked while the table changes: a handler calling sigaction() must not spin on our lock. */
	sigset_t all, saved;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &saved);
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
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
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
