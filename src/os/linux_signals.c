/* SPDX-License-Identifier: BSD-3-Clause
 * Linux OS layer: signals and page protection, for the next-touch runtime
 * (src/memory/next_touch.c).  Everything here that the contract marks
 * async-signal-safe calls only system calls and the async-signal-safe libc
 * functions of POSIX (sigaction, pthread_sigmask, raise, mprotect): it runs
 * inside a SIGSEGV handler, possibly interrupting malloc or a lock holder.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "os/os.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

int nk__os_protect(void *addr, size_t len, int access, int *sys_errno)
{
	int prot;

	switch (access) {
	case NK__PROT_NONE:
		prot = PROT_NONE;
		break;
	case NK__PROT_RW:
		prot = PROT_READ | PROT_WRITE;
		break;
	default:
		return nk__os_sys(EINVAL, sys_errno);
	}
	return mprotect(addr, len, prot) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_fault_install(nk__os_fault_fn fn, struct sigaction *old, int *sys_errno)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = (void (*)(int, siginfo_t *, void *))fn;
	/*
	 * SA_ONSTACK: a program that gave its threads alternate stacks (to
	 * report stack overflows) gets our handler there too, so a foreign
	 * overflow fault we chain reaches its handler on the stack it expects.
	 * SA_RESTART: a next-touch fault is invisible to the program and must
	 * not make an interrupted slow system call fail with EINTR.
	 * No SA_NODEFER: a fault inside the handler itself is a bug and must
	 * kill the process, not recurse.
	 */
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSEGV, &sa, old) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_fault_query(struct sigaction *cur, int *sys_errno)
{
	return sigaction(SIGSEGV, NULL, cur) ? nk__os_sys(errno, sys_errno) : nk__os_ok(0, sys_errno);
}

int nk__os_fault_current(nk__os_fault_fn fn, int *sys_errno)
{
	struct sigaction cur;

	if (sigaction(SIGSEGV, NULL, &cur))
		return nk__os_sys(errno, sys_errno);
	return nk__os_ok((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == (void (*)(int, siginfo_t *, void *))fn,
			 sys_errno);
}

int nk__os_fault_decode(const void *info, void **addr)
{
	const siginfo_t *si = info;

	*addr = si->si_addr;
	/* si_code <= 0: sent by kill(2), raise(3), sigqueue(3): si_addr is
	 * meaningless and nothing is waiting for a page to become accessible. */
	if (si->si_code <= 0)
		return NK__FAULT_SENT;
	if (si->si_code == SEGV_ACCERR)
		return NK__FAULT_ACCESS;
	if (si->si_code == SEGV_MAPERR)
		return NK__FAULT_UNMAPPED;
	return NK__FAULT_OTHER; /* SEGV_BNDERR, SEGV_PKUERR, SEGV_MTE*: not protection faults */
}

void nk__os_fault_default(const void *info)
{
	const siginfo_t *si = info;
	struct sigaction dfl;

	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGSEGV, &dfl, NULL);
	/*
	 * A real fault re-executes the instruction on return and now dies with
	 * the default action (a core dump at the right place).  A signal that
	 * was sent would not come back by itself: send it again; it stays
	 * pending (SIGSEGV is blocked in the handler) until the handler returns.
	 */
	if (si->si_code <= 0)
		raise(SIGSEGV);
}

void nk__os_fault_chain(int sig, void *info, void *uctx, const struct sigaction *prev)
{
	sigset_t saved;
	int masked;

	if (!(prev->sa_flags & SA_SIGINFO) && (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN)) {
		/* An ignored synchronous SIGSEGV cannot be ignored: the kernel
		 * forces the default action; we do the same. */
		nk__os_fault_default(info);
		return;
	}
	/* Block what the program asked to block while its handler runs, as the
	 * kernel would have done had its handler been the installed one. */
	masked = pthread_sigmask(SIG_BLOCK, &prev->sa_mask, &saved) == 0;
	if (prev->sa_flags & SA_SIGINFO)
		prev->sa_sigaction(sig, info, uctx);
	else
		prev->sa_handler(sig);
	if (masked)
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
}
