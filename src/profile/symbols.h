/* SPDX-License-Identifier: BSD-3-Clause
 * Offline symbolisation of a profile (src/profile/symbols.c, elfutils libdw):
 * instruction addresses to function and file:line, data addresses to static
 * variables (ELF symbols + DWARF type), and to the mapping that holds them,
 * from the text of /proc/PID/maps a profile recorded.  The ELF files are
 * opened at report time, so the binaries must still be there (a rebuilt
 * binary is detected by its build id / size and reported, not trusted).
 */
#ifndef NK_PROFILE_SYMBOLS_H
#define NK_PROFILE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "numakit.h"

typedef struct nk__symtab nk__symtab;

/**
 * Build from the text of /proc/PID/maps (several texts of one process may be
 * given: objects loaded late; later ones win on overlap).  Objects that
 * cannot be opened are listed in the warnings (nk__sym_warnings) and their
 * addresses stay unknown.  Errors: NK_EINVAL, NK_EPARSE (not maps text), NK_ENOMEM.
 */
int nk__sym_open(const char *const *maps_texts, size_t n, nk__symtab **out, nk_error *err);
void nk__sym_close(nk__symtab *s);

/** Text of the problems met (objects missing or changed), NUL-terminated; "" when none. */
const char *nk__sym_warnings(const nk__symtab *s);

/* Strings point into the symtab and live until nk__sym_close. */
struct nk__sym_loc {
	const char *function; /* demangled when C++, NULL unknown */
	const char *file;     /* source file (as DWARF has it), NULL unknown */
	int line;             /* 0 unknown */
	const char *object;   /* path of the ELF object, NULL when the address is in no file mapping */
	uint64_t offset;      /* address relative to the object's load base (stable under ASLR) */
};
/** Describe instruction address @p ip.  Returns 1 when anything is known, 0 when nothing is. */
int nk__sym_ip(nk__symtab *s, uint64_t ip, struct nk__sym_loc *out);

struct nk__sym_var {
	const char *name;      /* symbol name (demangled) */
	const char *type;      /* DWARF type text ("double[1048576]"), NULL unknown */
	uint64_t addr, size;   /* run-time address and size */
	const char *object;    /* ELF object defining it */
	const char *decl_file; /* DWARF declaration, NULL unknown */
	int decl_line;
};
/** The static variable (STT_OBJECT, not TLS) containing data address @p addr: 1 found, 0 not. */
int nk__sym_data(nk__symtab *s, uint64_t addr, struct nk__sym_var *out);

enum nk__map_kind { NK__MAP_NONE = 0, NK__MAP_FILE, NK__MAP_HEAP, NK__MAP_STACK, NK__MAP_ANON, NK__MAP_OTHER };
/** The mapping holding @p addr: its kind, name (path or "[heap]" ...), and range.  Returns the kind. */
int nk__sym_mapping(nk__symtab *s, uint64_t addr, const char **name, uint64_t *lo, uint64_t *hi);

#endif
