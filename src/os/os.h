/*
 * The OS layer contract.  Everything numakit asks of the kernel goes through
 * here: files of /sys and /proc (always relative to an fsroot, so captured
 * machine dumps exercise the same code as the live system) and system calls.
 * Functions return 0 or a negative NK_E* code; they decide nothing.
 */
#ifndef NK_OS_H
#define NK_OS_H

#include <stddef.h>

#include "numakit.h"
#include "util/list.h"

/** Files larger than this are refused (sysfs values are tiny; /proc/cpuinfo on 1k cpus is < 1 MiB). */
#define NK__OS_MAX_FILE (8u << 20)

/**
 * Read the file @p path (absolute, e.g. "/sys/devices/system/node/online")
 * under @p root ("/" or NULL for the live system) into a malloc'ed buffer.
 * Embedded NUL bytes (seen in captured dumps) end the text: the result is a C
 * string.  Returns 0, NK_ENOENT (no such file), NK_EIO (unreadable/too large),
 * NK_ENOMEM.
 */
int nk__os_read_file(const char *root, const char *path, char **out);

/**
 * Read a whole user file (a machine file, a plan) byte for byte, NULs
 * included, refusing more than @p max bytes.  *out is NUL-terminated for
 * convenience; *len is the byte count.  Returns 0, NK_ENOENT, NK_EPERM,
 * NK_EIO (unreadable, a directory, larger than max), NK_ENOMEM; *sys_errno
 * (may be NULL) receives errno for messages.
 */
int nk__os_read_whole(const char *path, size_t max, char **out, size_t *len, int *sys_errno);

/**
 * Replace @p path atomically with @p len bytes: write a sibling temporary
 * file (mode 0666 less the umask), fsync, rename over.  A failure leaves the
 * old file intact and no temporary behind.  Returns 0 or NK_EIO/NK_ENOMEM;
 * *stage names the step that failed ("create", "write", "replace") and
 * *sys_errno its errno.
 */
int nk__os_write_atomic(const char *path, const void *data, size_t len, const char **stage, int *sys_errno);

/** 1 when @p path exists under @p root, 0 otherwise. */
int nk__os_exists(const char *root, const char *path);

/**
 * List the entries of directory @p path under @p root whose names start with
 * @p prefix; "." and ".." are skipped.  *names is a malloc'ed array of
 * malloc'ed strings (free with nk__os_free_names).  Returns 0, NK_ENOENT,
 * NK_EIO, NK_ENOMEM.
 */
int nk__os_list_dir(const char *root, const char *path, const char *prefix, char ***names, size_t *n);
void nk__os_free_names(char **names, size_t n);

/** Base page size of the running system. */
unsigned long nk__os_page_size(void);

/** Cpus the calling thread may run on (sched_getaffinity). Returns 0, NK_ENOSYS, NK_ENOMEM. */
int nk__os_affinity(nk__ilist *cpus);

#endif
