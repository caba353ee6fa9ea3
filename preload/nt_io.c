/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_nt_io.so: I/O into next-touch memory for programs that do not
 * call nk_next_touch_prepare() themselves.
 *
 * The kernel does not fault on a program's behalf: read(2) into an armed
 * (PROT_NONE) page fails with EFAULT instead of raising SIGSEGV, so the
 * next-touch handler never sees it.  Each wrapper below first makes the
 * calling thread the next toucher of its destination buffers
 * (nk_next_touch_prepare: armed pages move to the caller's node and get their
 * access back), then calls the real function, found with dlsym(RTLD_NEXT).
 * The whole destination counts as touched, also the part a short read leaves
 * unwritten.
 *
 * Use: LD_PRELOAD=libnumakit_nt_io.so, or link the program with
 * -lnumakit_nt_io before libc (any link line does: libc comes last).  The
 * program must use the shared libnumakit (the one this library calls), or
 * the registry it arms is not the one prepared here.  Covered calls: read,
 * pread(64), readv, preadv(64), preadv2, recv, recvfrom, recvmsg, recvmmsg,
 * fread, fread_unlocked and the _FORTIFY_SOURCE forms __read_chk,
 * __pread(64)_chk, __recv_chk, __recvfrom_chk, __fread_chk,
 * __fread_unlocked_chk.  Not covered: see docs/next_touch.md.
 *
 * A front end: it holds no placement logic and makes no system call of its
 * own; with nothing armed each wrapper costs one registry scan.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "numakit.h"
#include "common/real_next.h"

#define NT_EXPORT __attribute__((visibility("default")))

/* glibc may define these as macros (extern inlines, fortify); we define the functions. */
#undef fread_unlocked
#undef read
#undef pread
#undef recv
#undef recvfrom
#undef fread

NT_EXPORT int nk_nt_io_active(void);

/* Tests and tools look this up (dlsym(RTLD_DEFAULT)) to know the wrappers are in place. */
NT_EXPORT int nk_nt_io_active(void)
{
	return 1;
}

/* real_, the next definition of @p name: REAL fails with -1, REAL_OR with @p fail (common/real_next.h). */
#define REAL(T, name) NK_REAL_NEXT(T, name, -1)
#define REAL_OR(T, name, fail) NK_REAL_NEXT(T, name, fail)

/* The signatures wrapped. */
typedef ssize_t read_fn(int, void *, size_t);
typedef ssize_t pread_fn(int, void *, size_t, off_t);
typedef ssize_t pread64_fn(int, void *, size_t, off64_t);
typedef ssize_t readv_fn(int, const struct iovec *, int);
typedef ssize_t preadv_fn(int, const struct iovec *, int, off_t);
typedef ssize_t preadv64_fn(int, const struct iovec *, int, off64_t);
typedef ssize_t preadv2_fn(int, const struct iovec *, int, off_t, int);
typedef ssize_t recv_fn(int, void *, size_t, int);
typedef ssize_t recvfrom_fn(int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t recvmsg_fn(int, struct msghdr *, int);
typedef int recvmmsg_fn(int, struct mmsghdr *, unsigned int, int, struct timespec *);
typedef size_t fread_fn(void *, size_t, size_t, FILE *);
typedef ssize_t read_chk_fn(int, void *, size_t, size_t);
typedef ssize_t pread_chk_fn(int, void *, size_t, off_t, size_t);
typedef ssize_t pread64_chk_fn(int, void *, size_t, off64_t, size_t);
typedef ssize_t recv_chk_fn(int, void *, size_t, size_t, int);
typedef ssize_t recvfrom_chk_fn(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
typedef size_t fread_chk_fn(void *, size_t, size_t, size_t, FILE *);

static void nt_prepare_iov(const struct iovec *iov, int n)
{
	for (int i = 0; iov && i < n; i++)
		nk_next_touch_prepare(iov[i].iov_base, iov[i].iov_len);
}

static void nt_prepare_msg(const struct msghdr *m)
{
	if (!m)
		return;
	/* The kernel writes the payload, the sender's address and the control data. */
	nt_prepare_iov(m->msg_iov, (int)m->msg_iovlen);
	nk_next_touch_prepare(m->msg_name, m->msg_namelen);
	nk_next_touch_prepare(m->msg_control, m->msg_controllen);
}

static void nt_prepare_addr(struct sockaddr *addr, socklen_t *len)
{
	if (!len)
		return;
	nk_next_touch_prepare(len, sizeof *len);
	if (addr)
		nk_next_touch_prepare(addr, *len);
}

/* size * n without wrapping (fread's own contract caps it the same way). */
static size_t nt_bytes(size_t size, size_t n)
{
	return size && n > SIZE_MAX / size ? SIZE_MAX : size * n;
}

NT_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	REAL(read_fn, read);
	nk_next_touch_prepare(buf, count);
	return real_(fd, buf, count);
}

NT_EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
	REAL(pread_fn, pread);
	nk_next_touch_prepare(buf, count);
	return real_(fd, buf, count, off);
}

NT_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off64_t off)
{
	REAL(pread64_fn, pread64);
	nk_next_touch_prepare(buf, count);
	return real_(fd, buf, count, off);
}

NT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	REAL(readv_fn, readv);
	nt_prepare_iov(iov, n);
	return real_(fd, iov, n);
}

NT_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	REAL(preadv_fn, preadv);
	nt_prepare_iov(iov, n);
	return real_(fd, iov, n, off);
}

NT_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off)
{
	REAL(preadv64_fn, preadv64);
	nt_prepare_iov(iov, n);
	return real_(fd, iov, n, off);
}

NT_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
	REAL(preadv2_fn, preadv2);
	nt_prepare_iov(iov, n);
	return real_(fd, iov, n, off, flags);
}

NT_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	REAL(recv_fn, recv);
	nk_next_touch_prepare(buf, len);
	return real_(fd, buf, len, flags);
}

NT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr, socklen_t *alen)
{
	REAL(recvfrom_fn, recvfrom);
	nk_next_touch_prepare(buf, len);
	nt_prepare_addr(addr, alen);
	return real_(fd, buf, len, flags, addr, alen);
}

NT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	REAL(recvmsg_fn, recvmsg);
	nt_prepare_msg(msg);
	return real_(fd, msg, flags);
}

NT_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int n, int flags, struct timespec *timeout)
{
	REAL(recvmmsg_fn, recvmmsg);
	for (unsigned int i = 0; vec && i < n; i++) {
		nt_prepare_msg(&vec[i].msg_hdr);
		nk_next_touch_prepare(&vec[i].msg_len, sizeof vec[i].msg_len);
	}
	return real_(fd, vec, n, flags, timeout);
}

/*
 * fread copies small requests out of the FILE buffer (user space: ordinary
 * faults, next-touch works unaided) but reads large ones straight into the
 * caller's buffer with the read system call, inside libc where no PLT call
 * can be intercepted: that one would fail with EFAULT.
 */
NT_EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *f)
{
	REAL_OR(fread_fn, fread, 0);
	nk_next_touch_prepare(ptr, nt_bytes(size, n));
	return real_(ptr, size, n, f);
}

NT_EXPORT size_t fread_unlocked(void *ptr, size_t size, size_t n, FILE *f)
{
	REAL_OR(fread_fn, fread_unlocked, 0);
	nk_next_touch_prepare(ptr, nt_bytes(size, n));
	return real_(ptr, size, n, f);
}

/* _FORTIFY_SOURCE: the compiler calls these instead when it knows the buffer size. */
ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t off, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *alen);
size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f);
size_t __fread_unlocked_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f);

NT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	REAL(read_chk_fn, __read_chk);
	nk_next_touch_prepare(buf, count < buflen ? count : buflen);
	return real_(fd, buf, count, buflen);
}

NT_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t count, off_t off, size_t buflen)
{
	REAL(pread_chk_fn, __pread_chk);
	nk_next_touch_prepare(buf, count < buflen ? count : buflen);
	return real_(fd, buf, count, off, buflen);
}

NT_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t count, off64_t off, size_t buflen)
{
	REAL(pread64_chk_fn, __pread64_chk);
	nk_next_touch_prepare(buf, count < buflen ? count : buflen);
	return real_(fd, buf, count, off, buflen);
}

NT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	REAL(recv_chk_fn, __recv_chk);
	nk_next_touch_prepare(buf, len < buflen ? len : buflen);
	return real_(fd, buf, len, buflen, flags);
}

NT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, struct sockaddr *addr,
				 socklen_t *alen)
{
	REAL(recvfrom_chk_fn, __recvfrom_chk);
	nk_next_touch_prepare(buf, len < buflen ? len : buflen);
	nt_prepare_addr(addr, alen);
	return real_(fd, buf, len, buflen, flags, addr, alen);
}

NT_EXPORT size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f)
{
	REAL_OR(fread_chk_fn, __fread_chk, 0);
	size_t want = nt_bytes(size, n);
	nk_next_touch_prepare(ptr, want < ptrlen ? want : ptrlen);
	return real_(ptr, ptrlen, size, n, f);
}

NT_EXPORT size_t __fread_unlocked_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *f)
{
	REAL_OR(fread_chk_fn, __fread_unlocked_chk, 0);
	size_t want = nt_bytes(size, n);
	nk_next_touch_prepare(ptr, want < ptrlen ? want : ptrlen);
	return real_(ptr, ptrlen, size, n, f);
}
