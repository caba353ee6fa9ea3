/* SPDX-License-Identifier: BSD-3-Clause
 * I/O wrappers of libnumakit_prof.so: the calls through which the kernel
 * reads or writes a user buffer that may hold pages the pagefault sampler
 * revoked.  The kernel does not fault on the program's behalf (read(2) into a
 * PROT_NONE page fails with EFAULT, write(2) from one too), so each wrapper
 * brackets the real call (dlsym(RTLD_NEXT)) with nkp_pf_io_begin/_end: our
 * pages in the buffer get their access back (and count as samples flagged
 * NK__SF_IO, the caller's tid), and the sampler keeps off the buffer until
 * the call returned.  With the pagefault sampler off, a wrapper costs one
 * atomic load.
 *
 * The mechanism is preload/nt_io.c's; the target differs: nt_io.c prepares
 * next-touch memory of libnumakit's registry, this prepares the sampler's
 * revoked pages, for reads and writes alike (a revoked page faults on any
 * access).  Covered: read, pread(64), readv, preadv(64), preadv2, recv,
 * recvfrom, recvmsg, recvmmsg, write, pwrite(64), writev, pwritev(64),
 * pwritev2, send, sendto, sendmsg, sendmmsg, fread(_unlocked), fwrite(_unlocked),
 * vmsplice, getrandom, the _FORTIFY_SOURCE forms __read_chk, __pread(64)_chk,
 * __recv_chk, __recvfrom_chk, __fread_chk, __fread_unlocked_chk.  Excluded
 * from sampling for good (nkp_pf_exclude): a caller-supplied stdio buffer
 * (setvbuf: libc reads into it inside the library, where no call can be
 * wrapped) and stacks the program allocates (sigaltstack,
 * pthread_attr_setstack, setcontext, swapcontext: the kernel pushes signal
 * frames there and cannot into a revoked page).
 *
 * Not wrapped, on purpose: fgets, getline, getc & co. copy out of the FILE
 * buffer in user space (ordinary faults work) - only fread/fwrite of large
 * requests go straight between the caller's buffer and the kernel;
 * process_vm_readv/writev (the calls of a single-copy MPI transport: what fails
 * there is the peer's call on our revoked pages, which nothing on our side can
 * give back; under a launcher `numakit profile` turns those transfers off,
 * docs/profile.md "Profiling an MPI job");
 * ioctl, getdents, stat and the like (small, rarely tracked buffers);
 * io_uring and aio (the kernel copies after the call returned: see the
 * limitations in pagefault.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "../common/real_next.h"
#include "prof.h"

#undef fread_unlocked
#undef fwrite_unlocked
#undef read
#undef pread
#undef recv
#undef recvfrom
#undef fread

/* real_: the next definition of @p name; missing (a libc without it): ENOSYS and @p fail (common/real_next.h). */
#define REAL(T, name, fail) NK_REAL_NEXT(T, name, fail)

/*
 * The buffers of one call, as up to IO_RANGES ranges, each held separately: one hold from a heap buffer to
 * a stack one (recvmsg's payload and msg_name) would keep the sampler off everything in between for as
 * long as the call blocks.  Close buffers (within IO_NEAR) share a range; past IO_RANGES ranges the
 * nearest one grows.
 */
#define IO_RANGES 4
#define IO_NEAR ((uintptr_t)1 << 20)
struct io_span {
	int n;
	uintptr_t lo[IO_RANGES], hi[IO_RANGES];
	int tok[IO_RANGES];
};
#define IO_SPAN_EMPTY { 0 }

static uintptr_t io_gap(uintptr_t lo, uintptr_t hi, uintptr_t s, uintptr_t e)
{
	return e < lo ? lo - e : s > hi ? s - hi : 0;
}

static void span_add(struct io_span *sp, const void *p, size_t len)
{
	uintptr_t s = (uintptr_t)p, e = s + len;
	int best = -1;

	if (!p || !len)
		return;
	if (e < s)
		e = UINTPTR_MAX;
	for (int i = 0; i < sp->n; i++)
		if (best < 0 || io_gap(sp->lo[i], sp->hi[i], s, e) < io_gap(sp->lo[best], sp->hi[best], s, e))
			best = i;
	if (best < 0 || (io_gap(sp->lo[best], sp->hi[best], s, e) > IO_NEAR && sp->n < IO_RANGES)) {
		sp->lo[sp->n] = s;
		sp->hi[sp->n] = e;
		sp->n++;
		return;
	}
	if (s < sp->lo[best])
		sp->lo[best] = s;
	if (e > sp->hi[best])
		sp->hi[best] = e;
}

static void span_iov(struct io_span *sp, const struct iovec *iov, long n)
{
	for (long i = 0; iov && i < n; i++)
		span_add(sp, iov[i].iov_base, iov[i].iov_len);
}

static void span_msg(struct io_span *sp, const struct msghdr *m)
{
	if (!m)
		return;
	span_iov(sp, m->msg_iov, (long)m->msg_iovlen);
	span_add(sp, m->msg_name, m->msg_namelen);
	span_add(sp, m->msg_control, m->msg_controllen);
}

static void io_begin(struct io_span *sp, int access)
{
	for (int i = 0; i < sp->n; i++)
		sp->tok[i] = nkp_pf_io_begin(sp->lo[i], sp->hi[i], access);
}

/* One buffer.  The token of nkp_pf_io_begin. */
static int io_begin1(const void *p, size_t len, int access)
{
	uintptr_t s = (uintptr_t)p, e = s + len;

	if (!p || !len)
		return -1;
	return nkp_pf_io_begin(s, e < s ? UINTPTR_MAX : e, access);
}

/* The call returned: end the holds; errno stays the real call's. */
static void io_end1(int token)
{
	if (token >= 0) {
		int e = errno;
		nkp_pf_io_end(token);
		errno = e;
	}
}

static void io_end(struct io_span *sp)
{
	for (int i = 0; i < sp->n; i++)
		io_end1(sp->tok[i]);
}

static size_t io_bytes(size_t size, size_t n)
{
	return size && n > SIZE_MAX / size ? SIZE_MAX : size * n;
}

static size_t io_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* The kernel writes the buffer (read-like) or reads it (write-like). */
#define KW NK__ACC_WRITE
#define KR NK__ACC_READ

/* A wrapper of a call with one buffer (@p BUF, @p LEN). */
#define WRAP1(ret, name, fail, acc, BUF, LEN, params, args)       \
	NKP_API ret name params;                                  \
	NKP_API ret name params                                   \
	{                                                         \
		REAL(__typeof__(name), name, fail);               \
		int t_ = io_begin1((BUF), (LEN), (acc));          \
		ret r_ = real_ args;                              \
		io_end1(t_);                                      \
		return r_;                                        \
	}

/* A wrapper of a call whose buffers are an iovec array. */
#define WRAPV(name, acc, params, args)                            \
	NKP_API ssize_t name params;                              \
	NKP_API ssize_t name params                               \
	{                                                         \
		REAL(__typeof__(name), name, -1);                 \
		struct io_span sp_ = IO_SPAN_EMPTY;               \
		span_iov(&sp_, iov, n);                           \
		io_begin(&sp_, (acc));                            \
		ssize_t r_ = real_ args;                          \
		io_end(&sp_);                                     \
		return r_;                                        \
	}

WRAP1(ssize_t, read, -1, KW, buf, count, (int fd, void *buf, size_t count), (fd, buf, count))
WRAP1(ssize_t, pread, -1, KW, buf, count, (int fd, void *buf, size_t count, off_t off), (fd, buf, count, off))
WRAP1(ssize_t, pread64, -1, KW, buf, count, (int fd, void *buf, size_t count, off64_t off), (fd, buf, count, off))
WRAP1(ssize_t, recv, -1, KW, buf, len, (int fd, void *buf, size_t len, int flags), (fd, buf, len, flags))
WRAP1(ssize_t, write, -1, KR, buf, count, (int fd, const void *buf, size_t count), (fd, buf, count))
WRAP1(ssize_t, pwrite, -1, KR, buf, count, (int fd, const void *buf, size_t count, off_t off),
      (fd, buf, count, off))
WRAP1(ssize_t, pwrite64, -1, KR, buf, count, (int fd, const void *buf, size_t count, off64_t off),
      (fd, buf, count, off))
WRAP1(ssize_t, send, -1, KR, buf, len, (int fd, const void *buf, size_t len, int flags), (fd, buf, len, flags))
WRAP1(ssize_t, sendto, -1, KR, buf, len,
      (int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr, socklen_t alen),
      (fd, buf, len, flags, addr, alen))
/* fread/fwrite: small requests are copied through the FILE buffer in user space, large ones go straight
 * between the caller's buffer and the kernel inside libc, where no call can be wrapped. */
WRAP1(size_t, fread, 0, KW, ptr, io_bytes(size, n), (void *ptr, size_t size, size_t n, FILE *f), (ptr, size, n, f))
WRAP1(size_t, fread_unlocked, 0, KW, ptr, io_bytes(size, n), (void *ptr, size_t size, size_t n, FILE *f),
      (ptr, size, n, f))
WRAP1(size_t, fwrite, 0, KR, ptr, io_bytes(size, n), (const void *ptr, size_t size, size_t n, FILE *f),
      (ptr, size, n, f))
WRAP1(size_t, fwrite_unlocked, 0, KR, ptr, io_bytes(size, n), (const void *ptr, size_t size, size_t n, FILE *f),
      (ptr, size, n, f))

/* getrandom: programs fill large arrays with it (random initial data). */
WRAP1(ssize_t, getrandom, -1, KW, buf, len, (void *buf, size_t len, unsigned int flags), (buf, len, flags))

WRAPV(readv, KW, (int fd, const struct iovec *iov, int n), (fd, iov, n))
WRAPV(preadv, KW, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off))
WRAPV(preadv64, KW, (int fd, const struct iovec *iov, int n, off64_t off), (fd, iov, n, off))
WRAPV(preadv2, KW, (int fd, const struct iovec *iov, int n, off_t off, int flags), (fd, iov, n, off, flags))
WRAPV(writev, KR, (int fd, const struct iovec *iov, int n), (fd, iov, n))
WRAPV(pwritev, KR, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off))
WRAPV(pwritev64, KR, (int fd, const struct iovec *iov, int n, off64_t off), (fd, iov, n, off))
WRAPV(pwritev2, KR, (int fd, const struct iovec *iov, int n, off_t off, int flags), (fd, iov, n, off, flags))

/* vmsplice: the kernel reads (or, with a pipe's read end, writes) the user pages. */
NKP_API ssize_t vmsplice(int fd, const struct iovec *iov, size_t n, unsigned int flags)
{
	REAL(__typeof__(vmsplice), vmsplice, -1);
	struct io_span sp = IO_SPAN_EMPTY;
	span_iov(&sp, iov, (long)n);
	io_begin(&sp, NK__ACC_UNKNOWN);
	ssize_t r = real_(fd, iov, n, flags);
	io_end(&sp);
	return r;
}

NKP_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr, socklen_t *alen)
{
	REAL(__typeof__(recvfrom), recvfrom, -1);
	struct io_span sp = IO_SPAN_EMPTY;
	span_add(&sp, buf, len);
	if (alen) {
		span_add(&sp, alen, sizeof *alen);
		span_add(&sp, addr, *alen);
	}
	io_begin(&sp, KW);
	ssize_t r = real_(fd, buf, len, flags, addr, alen);
	io_end(&sp);
	return r;
}

NKP_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	REAL(__typeof__(recvmsg), recvmsg, -1);
	struct io_span sp = IO_SPAN_EMPTY;
	span_msg(&sp, msg);
	io_begin(&sp, KW);
	ssize_t r = real_(fd, msg, flags);
	io_end(&sp);
	return r;
}

NKP_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	REAL(__typeof__(sendmsg), sendmsg, -1);
	struct io_span sp = IO_SPAN_EMPTY;
	span_msg(&sp, msg);
	io_begin(&sp, KR);
	ssize_t r = real_(fd, msg, flags);
	io_end(&sp);
	return r;
}

static struct io_span span_mmsg(struct mmsghdr *vec, unsigned int n)
{
	struct io_span sp = IO_SPAN_EMPTY;

	for (unsigned int i = 0; vec && i < n; i++)
		span_msg(&sp, &vec[i].msg_hdr);
	if (vec && n)
		span_add(&sp, vec, n * sizeof *vec); /* msg_len written back */
	return sp;
}

NKP_API int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags, struct timespec *timeout)
{
	REAL(__typeof__(recvmmsg), recvmmsg, -1);
	struct io_span sp = span_mmsg(vec, n);
	io_begin(&sp, KW);
	int r = real_(fd, vec, n, flags, timeout);
	io_end(&sp);
	return r;
}

NKP_API int sendmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags)
{
	REAL(__typeof__(sendmmsg), sendmmsg, -1);
	struct io_span sp = span_mmsg(vec, n);
	io_begin(&sp, KR);
	int r = real_(fd, vec, n, flags);
	io_end(&sp);
	return r;
}

/* A buffer the program gives stdio: libc reads and writes it with system calls from inside, for the life
 * of the FILE.  Excluded for good (nkp_pf_exclude). */
NKP_API int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
	REAL(__typeof__(setvbuf), setvbuf, EOF);
	if (buf && mode != _IONBF && size)
		nkp_pf_exclude((uintptr_t)buf, (uintptr_t)buf + size);
	return real_(f, buf, mode, size);
}

/*
 * Stacks in memory the program allocated (and alloc.c may track): the kernel writes signal frames there
 * itself and cannot when the page is revoked (the process dies).  Excluded for good, as they are given.
 */
#define IO_MAX_STACK ((size_t)1 << 30) /* larger "stacks" are garbage in a ucontext_t: ignored */

static void io_exclude_stack(const void *sp, size_t size)
{
	if (sp && size && size <= IO_MAX_STACK)
		nkp_pf_exclude((uintptr_t)sp, (uintptr_t)sp + size);
}

NKP_API int sigaltstack(const stack_t *ss, stack_t *old)
{
	REAL(__typeof__(sigaltstack), sigaltstack, -1);
	if (ss && !(ss->ss_flags & SS_DISABLE))
		io_exclude_stack(ss->ss_sp, ss->ss_size);
	return real_(ss, old);
}

NKP_API int pthread_attr_setstack(pthread_attr_t *attr, void *addr, size_t size)
{
	/* pthread functions return the error number; ENOSYS when libc lacks it. */
	static void *slot;
	__typeof__(pthread_attr_setstack) *real =
		(__typeof__(pthread_attr_setstack) *)nk_real_next(&slot, "pthread_attr_setstack");
	if (!real)
		return ENOSYS;
	io_exclude_stack(addr, size);
	return real(attr, addr, size);
}

/* Coroutines (makecontext is variadic and cannot be forwarded: the stack is caught when switched to). */
NKP_API int setcontext(const ucontext_t *ucp)
{
	REAL(__typeof__(setcontext), setcontext, -1);
	if (ucp)
		io_exclude_stack(ucp->uc_stack.ss_sp, ucp->uc_stack.ss_size);
	return real_(ucp);
}

NKP_API int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	REAL(__typeof__(swapcontext), swapcontext, -1);
	if (ucp)
		io_exclude_stack(ucp->uc_stack.ss_sp, ucp->uc_stack.ss_size);
	return real_(oucp, ucp);
}

/* _FORTIFY_SOURCE: the compiler calls these when it knows the buffer size. */
ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t off, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *alen);
size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f);
size_t __fread_unlocked_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f);

WRAP1(ssize_t, __read_chk, -1, KW, buf, io_min(count, buflen), (int fd, void *buf, size_t count, size_t buflen),
      (fd, buf, count, buflen))
WRAP1(ssize_t, __pread_chk, -1, KW, buf, io_min(count, buflen),
      (int fd, void *buf, size_t count, off_t off, size_t buflen), (fd, buf, count, off, buflen))
WRAP1(ssize_t, __pread64_chk, -1, KW, buf, io_min(count, buflen),
      (int fd, void *buf, size_t count, off64_t off, size_t buflen), (fd, buf, count, off, buflen))
WRAP1(ssize_t, __recv_chk, -1, KW, buf, io_min(len, buflen), (int fd, void *buf, size_t len, size_t buflen, int flags),
      (fd, buf, len, buflen, flags))
WRAP1(size_t, __fread_chk, 0, KW, ptr, io_min(io_bytes(size, n), ptrlen),
      (void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f), (ptr, ptrlen, size, n, f))
WRAP1(size_t, __fread_unlocked_chk, 0, KW, ptr, io_min(io_bytes(size, n), ptrlen),
      (void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f), (ptr, ptrlen, size, n, f))

NKP_API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *addr,
			       socklen_t *alen)
{
	REAL(__typeof__(__recvfrom_chk), __recvfrom_chk, -1);
	struct io_span sp = IO_SPAN_EMPTY;
	span_add(&sp, buf, io_min(len, buflen));
	if (alen) {
		span_add(&sp, alen, sizeof *alen);
		span_add(&sp, addr, *alen);
	}
	io_begin(&sp, KW);
	ssize_t r = real_(fd, buf, len, buflen, flags, addr, alen);
	io_end(&sp);
	return r;
}
