/* SPDX-License-Identifier: BSD-3-Clause
 * numakit/common.h: errors, the version, the export and deprecation macros, node and cpu lists.  Part of
 * the public API; include <numakit.h>, which includes it (it also compiles alone).  Conventions (errors,
 * identifiers, thread safety, API tiers): the top of <numakit.h>.
 *
 * API TIER: stable.  Every function here keeps its signature, its documented behaviour and its symbol in
 * libnumakit.so as long as the soname libnumakit.so.0 lasts; a call that is to go is first marked
 * NK_DEPRECATED for at least one minor release and removed only with a new soname.  @since on each
 * function names the release that introduced it.
 */
#ifndef NUMAKIT_COMMON_H
#define NUMAKIT_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

/* The version of this header (nk_version(): of the library loaded).  CMake reads it from here. */
#define NK_VERSION_MAJOR 0
#define NK_VERSION_MINOR 1
#define NK_VERSION_PATCH 0
#define NK_VERSION_STRING "0.1.0"

/* ------------------------------------------------ export and deprecation */

/* NK_API marks a function of libnumakit.so (exported when the library is built, plain otherwise); every
 * one is listed in abi/libnumakit.map at the version that introduced it. */
#if defined(NK_BUILDING_LIBRARY)
#define NK_API __attribute__((visibility("default")))
#else
#define NK_API
#endif

/**
 * NK_DEPRECATED(msg) marks a declaration that will go: a program that uses it compiles, with a warning
 * that carries @p msg (say what to use instead), where the compiler knows the deprecated attribute (GCC,
 * Clang); elsewhere it expands to nothing.  Defining NUMAKIT_DISABLE_DEPRECATE_WARNINGS before including
 * <numakit.h> silences those warnings.  It is written after NK_API:
 *   NK_API NK_DEPRECATED("use nk_new()") int nk_old(void);
 * A deprecated call stays exported until the soname changes.
 * @since 0.1
 */
#if defined(NUMAKIT_DISABLE_DEPRECATE_WARNINGS)
#define NK_DEPRECATED(msg)
#elif defined(__GNUC__) || defined(__clang__)
#define NK_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define NK_DEPRECATED(msg)
#endif

/** Flag of the *_to_json calls: one line instead of indented text. */
#define NK_JSON_COMPACT 0x1u
#define NK_JSON_ALLFLAGS 0x1u

/* ---------------------------------------------------------------- errors */

/** Error codes.  Values are stable and part of the ABI. */
enum nk_errcode {
	NK_OK = 0,
	NK_EINVAL = -1,    /**< bad argument (NULL, out of range, unknown flag bit) */
	NK_ENOMEM = -2,    /**< out of memory in the library itself */
	NK_ENOENT = -3,    /**< a file or directory does not exist */
	NK_EIO = -4,       /**< a file exists but could not be read */
	NK_EPARSE = -5,    /**< input is corrupt, truncated or does not parse */
	NK_EVERSION = -6,  /**< a file's format version is not supported */
	NK_ENOSYS = -7,    /**< not supported by this kernel or build */
	NK_ENODEV = -8,    /**< no such node or cpu on this machine */
	NK_ERANGE = -9,    /**< result does not fit the buffer supplied */
	NK_ENODATA = -10,  /**< the value was never measured / is not known */
	NK_EPERM = -11,    /**< the operating system refused (permissions, cpuset) */
};

/** Maximum length of an nk_error message, including the terminating NUL. */
#define NK_ERROR_MSG_MAX 512

/** Details of a failure: the code and a one-line message. */
typedef struct nk_error {
	int code;                       /**< the NK_E* code returned */
	char message[NK_ERROR_MSG_MAX]; /**< e.g. "node3/distance: expected 4 values, found 3" */
} nk_error;

/** Static English message for an NK_E* code; never NULL.  @since 0.1 */
NK_API const char *nk_strerror(int code);

/** Library version "MAJOR.MINOR.PATCH" (of the library loaded, not of this header).  @since 0.1 */
NK_API const char *nk_version(void);

/* --- lists --- */

/**
 * Parse a list such as "0-3,8,10-15:2" (ranges, with an optional stride)
 * into increasing, duplicate-free ids.  Count/capacity semantics as above.
 * Errors: NK_EPARSE (message names the problem), NK_EINVAL.
 * @since 0.1
 */
NK_API int nk_parse_list(const char *text, int *ids, size_t cap, nk_error *err);

/**
 * Format increasing ids as a compact list ("0-3,8").  Writes at most @p cap
 * bytes including the NUL and returns the length the full text needs
 * (excluding the NUL), like snprintf.  Errors: NK_EINVAL.
 * @since 0.1
 */
NK_API int nk_format_list(const int *ids, size_t n, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* NUMAKIT_COMMON_H */
