/* SPDX-License-Identifier: BSD-3-Clause
 * libnumakit_plan.so: a data symbol's link-time address and size from an
 * ELF file (plan.h).  Statics are in .symtab, not .dynsym, and the runtime
 * runs inside the program (possibly before its allocator is usable), so this
 * maps the file read-only and walks the section headers itself: no libelf,
 * no malloc (but in the demangler, for C++ names).  64-bit ELF of the host's byte order only (the runtime's own).
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "advice_rt.h"

static int in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Search one symbol table; 1 found (exact match wins over a "name.N" match). */
/* @p sym (mangled) demangles to @p want. */
static int demangled_is(nkpl_demangle_fn demangle, const char *sym, const char *want)
{
	int status = -1, same;
	char *d;

	if (!demangle || strncmp(sym, "_Z", 2) || !strncmp(want, "_Z", 2))
		return 0;
	d = demangle(sym, NULL, NULL, &status);
	same = d && !status && !strcmp(d, want);
	free(d);
	return same;
}

static int search(const unsigned char *f, uint64_t fsz, const ElfW(Shdr) *sh, const ElfW(Shdr) *strsh,
		  const char *name, nkpl_demangle_fn demangle, uint64_t *value, uint64_t *size)
{
	int found = 0;

	if (sh->sh_entsize != sizeof(ElfW(Sym)) || !in_file(sh->sh_offset, sh->sh_size, fsz) ||
	    !in_file(strsh->sh_offset, strsh->sh_size, fsz) || !strsh->sh_size)
		return 0;
	const ElfW(Sym) *sym = (const ElfW(Sym) *)(f + sh->sh_offset);
	const char *str = (const char *)(f + strsh->sh_offset);
	size_t n = sh->sh_size / sizeof(ElfW(Sym));
	for (size_t i = 1; i < n; i++) {
		if (ELF64_ST_TYPE(sym[i].st_info) != STT_OBJECT || sym[i].st_shndx == SHN_UNDEF ||
		    sym[i].st_name >= strsh->sh_size || !sym[i].st_size)
			continue;
		const char *s = str + sym[i].st_name;
		if (!memchr(s, 0, strsh->sh_size - sym[i].st_name))
			continue;
		if (!nkpl_sym_matches(s, name)) {
			if (!demangled_is(demangle, s, name))
				continue;
			*value = sym[i].st_value; /* a demangled name is exact */
			*size = sym[i].st_size;
			return 1;
		}
		*value = sym[i].st_value;
		*size = sym[i].st_size;
		found = 1;
		if (!strcmp(s, name))
			return 1;
	}
	return found;
}

int nkpl_elf_symbol(const char *path, const char *name, nkpl_demangle_fn demangle, uint64_t *value, uint64_t *size,
		    const char **why)
{
	struct stat st;
	void *map = MAP_FAILED;
	int fd, rc = -1;

	*why = "cannot open the file";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(ElfW(Ehdr))) {
		*why = "not an ELF file";
		goto out;
	}
	map = nkpl_real_mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		*why = "cannot map the file";
		goto out;
	}
	const unsigned char *f = map;
	uint64_t fsz = (uint64_t)st.st_size;
	const ElfW(Ehdr) *eh = map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(ElfW(Shdr)) || !in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)), fsz)) {
		*why = "not a 64-bit ELF file with section headers";
		goto out;
	}
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(f + eh->e_shoff);
	*why = "no such data symbol in .symtab or .dynsym (stripped?)";
	/* .symtab first (statics), then .dynsym */
	for (int pass = 0; pass < 2 && rc; pass++)
		for (unsigned i = 0; i < eh->e_shnum && rc; i++) {
			if (sh[i].sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || sh[i].sh_link >= eh->e_shnum)
				continue;
			if (search(f, fsz, &sh[i], &sh[sh[i].sh_link], name, demangle, value, size))
				rc = 0;
		}
out:
	if (map != MAP_FAILED)
		nkpl_real_munmap(map, (size_t)st.st_size);
	close(fd);
	return rc;
}
