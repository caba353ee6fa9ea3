/* SPDX-License-Identifier: BSD-3-Clause
 * Offline symbolisation (symbols.h) with libelf + libdw.
 *
 * The maps texts are parsed strictly (the kernel's format, fs/proc/task_mmu.c
 * show_map_vma: "LO-HI PERM OFFSET MAJ:MIN INODE [NAME]", lines ascending and
 * disjoint), merged (a later text replaces what it overlaps) and kept sorted.
 * Every file mapping group (same path, device and inode) is one object: its
 * ELF headers are read at open to find the load bias (run-time address minus
 * link-time address), from the lowest mapping that maps a PT_LOAD segment.
 * Objects that are missing, not ELF, or replaced since (same device, other
 * inode; an offset past the end of the file) only give a warning line.
 *
 * Symbols and DWARF are loaded the first time an address of the object is
 * asked, into sorted arrays: ELF function and object symbols (.symtab of the
 * object or of its separate debug file /usr/lib/debug/.build-id/xx/yyy.debug,
 * else .dynsym), the address ranges of every compile unit, and every DWARF
 * variable whose location is one DW_OP_addr (or DW_OP_addrx).  Each lookup is then a binary
 * search plus, for lines, libdw's own cached line table search.
 *
 * The end of .bss lies in the anonymous mapping that follows an object's last
 * file mapping: addresses there (within the object's PT_LOAD extent) belong
 * to the object, for nk__sym_data and for nk__sym_mapping (kind FILE).
 *
 * C++ names are demangled with libstdc++'s __cxa_demangle, looked up at run
 * time (dlopen of libstdc++.so.6, no link dependency); without libstdc++ they
 * stay mangled.  Not thread-safe: one symtab per thread.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <dlfcn.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "profile/symbols.h"
#include "util/cmp.h"
#include "util/error.h"

#define MAX_LINE_NAME 4096 /* PATH_MAX: the longest name a maps line can carry */
#define TYPE_TEXT_MAX 256

struct smap {
	uint64_t lo, hi, off, inode;
	unsigned dmaj, dmin;
	int kind;
	int exec;         /* mapped executable */
	const char *name; /* owned by the symtab's string list */
	size_t obj;       /* index + 1 into objs, 0 none */
};

struct fsym {
	uint64_t addr, size; /* link-time */
	const char *name;    /* in the ELF string table; demangled on first use */
	int demangled; /* 0 not yet, 1 not mangled, 2 demangled */
	int rank;            /* prefer GLOBAL > WEAK > LOCAL, sized over unsized */
};

struct dvar {
	uint64_t addr; /* link-time */
	Dwarf_Off die;
	int done;
	const char *name, *type, *decl_file;
	int decl_line;
	uint64_t size; /* from the type, 0 unknown */
};

struct curange {
	uint64_t lo, hi;
	Dwarf_Off cu;
};

struct sobj {
	const char *path;
	uint64_t inode;
	unsigned dmaj, dmin;
	int ok;        /* ELF opened and bias known */
	uint64_t bias; /* run-time = link-time + bias */
	uint64_t end;  /* link-time end of the highest PT_LOAD (.bss included) */
	int fd, dbg_fd;
	Elf *elf, *dbg_elf;
	int syms_loaded;
	struct fsym *funcs, *objs;
	size_t nfuncs, nobjs;
	int dw_loaded;
	Dwarf *dw;
	struct curange *cus;
	size_t ncus;
	int vars_loaded;
	struct dvar *vars;
	size_t nvars;
};

struct nk__symtab {
	struct smap *maps;
	size_t nmaps;
	struct sobj *objs;
	size_t nobjs;
	char **strs;
	size_t nstrs, capstrs;
	char *warn;
	size_t wlen, wcap;
};

/* ---------------------------------------------------------------- helpers */

static const char *keep(nk__symtab *s, char *str)
{
	if (!str)
		return NULL;
	if (s->nstrs == s->capstrs) {
		size_t cap = s->capstrs ? s->capstrs * 2 : 64;
		char **v = realloc(s->strs, cap * sizeof *v);
		if (!v) {
			free(str);
			return NULL;
		}
		s->strs = v;
		s->capstrs = cap;
	}
	s->strs[s->nstrs++] = str;
	return str;
}

static const char *keep_copy(nk__symtab *s, const char *str)
{
	return keep(s, strdup(str));
}

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
static demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
	void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (lib) /* kept loaded: the pointer is used for the life of the process */
		cxa_demangle = (demangle_fn)(uintptr_t)dlsym(lib, "__cxa_demangle");
}

/* The demangled form of a C++ name (kept in the symtab), else @p name itself. */
static const char *demangle(nk__symtab *s, const char *name)
{
	int status = -1;
	char *d;

	if (!name || strncmp(name, "_Z", 2))
		return name;
	pthread_once(&cxa_once, find_demangler);
	if (!cxa_demangle || !(d = cxa_demangle(name, NULL, NULL, &status)))
		return name;
	if (status) {
		free(d);
		return name;
	}
	const char *k = keep(s, d);
	return k ? k : name;
}

static const char *sym_name(nk__symtab *s, struct fsym *f)
{
	if (!f->demangled) {
		const char *d = demangle(s, f->name);
		f->demangled = d == f->name ? 1 : 2;
		f->name = d;
	}
	return f->name;
}

static void warn(nk__symtab *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(nk__symtab *s, const char *fmt, ...)
{
	char line[MAX_LINE_NAME + 256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	line[n] = 0;
	if (s->warn && strstr(s->warn, line))
		return; /* the same file loaded twice */
	if (s->wlen + n + 1 > s->wcap) {
		size_t cap = (s->wlen + n + 1) * 2;
		char *w = realloc(s->warn, cap);
		if (!w)
			return; /* a lost warning is not worth failing for */
		s->warn = w;
		s->wcap = cap;
	}
	memcpy(s->warn + s->wlen, line, n + 1);
	s->wlen += n;
}

/* ------------------------------------------------------------ maps parser */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1..maxd hex digits at *p. */
static int get_hex(const char **p, const char *end, int maxd, uint64_t *v)
{
	int d = 0;
	uint64_t x = 0;
	while (*p < end && hexval(**p) >= 0) {
		if (++d > maxd)
			return -1;
		x = x << 4 | (uint64_t)hexval(**p);
		(*p)++;
	}
	*v = x;
	return d ? 0 : -1;
}

static int get_dec(const char **p, const char *end, uint64_t *v)
{
	int d = 0;
	uint64_t x = 0;
	while (*p < end && **p >= '0' && **p <= '9') {
		unsigned dig = (unsigned)(**p - '0');
		if (x > (UINT64_MAX - dig) / 10)
			return -1;
		x = x * 10 + dig;
		d++;
		(*p)++;
	}
	*v = x;
	return d ? 0 : -1;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

static int classify(const char *name)
{
	if (!*name || !strncmp(name, "[anon:", 6) || !strncmp(name, "[anon_shmem:", 12))
		return NK__MAP_ANON;
	if (!strcmp(name, "[heap]"))
		return NK__MAP_HEAP;
	if (!strcmp(name, "[stack]") || !strncmp(name, "[stack:", 7))
		return NK__MAP_STACK;
	if (name[0] == '/')
		return NK__MAP_FILE;
	return NK__MAP_OTHER;
}

/* One line [p, end) into *m (name malloc'ed into *name).  Returns NULL or what is wrong. */
static const char *parse_line(const char *p, const char *end, struct smap *m, char **name)
{
	uint64_t v, w;

	*name = NULL;
	if (get_hex(&p, end, 16, &m->lo) || expect(&p, end, '-'))
		return "expected LOW-HIGH addresses";
	if (get_hex(&p, end, 16, &m->hi) || expect(&p, end, ' '))
		return "expected LOW-HIGH addresses";
	if (m->lo >= m->hi)
		return "empty or reversed address range";
	if ((m->lo | m->hi) & 0xfff)
		return "addresses not page-aligned";
	if (end - p < 5 || (p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's') || p[4] != ' ')
		return "expected permissions like \"r-xp\"";
	m->exec = p[2] == 'x';
	p += 5;
	if (get_hex(&p, end, 16, &m->off) || expect(&p, end, ' '))
		return "expected a hexadecimal offset";
	if (m->off & 0xfff)
		return "offset not page-aligned";
	if (m->off + (m->hi - m->lo) < m->off)
		return "offset overflows";
	if (get_hex(&p, end, 8, &v) || expect(&p, end, ':') || get_hex(&p, end, 8, &w))
		return "expected a device MAJOR:MINOR";
	m->dmaj = (unsigned)v;
	m->dmin = (unsigned)w;
	if (expect(&p, end, ' ') || get_dec(&p, end, &m->inode))
		return "expected an inode number";
	if (p < end && *p != ' ')
		return "expected a space after the inode";
	while (p < end && *p == ' ')
		p++;
	/* the name: the rest of the line, seq_path escapes (\ooo) decoded */
	size_t len = (size_t)(end - p);
	if (len > MAX_LINE_NAME)
		return "name too long";
	char *n = malloc(len + 1), *q = n;
	if (!n)
		return "out of memory";
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20 || c == 0x7f) {
			free(n);
			return "control character in the name";
		}
		if (c == '\\' && end - p >= 4 && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			c = (unsigned char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			if (!c) {
				free(n);
				return "NUL escape in the name";
			}
			p += 4;
		} else {
			p++;
		}
		*q++ = (char)c;
	}
	*q = 0;
	/* Files have paths; anonymous-inode mappings (a perf_event ring buffer of the timer sampler, io_uring,
	 * dma-buf) have an inode and an "anon_inode:" name: no file to symbolise, like anonymous memory. */
	if (m->inode && n[0] != '/' && strncmp(n, "anon_inode:", 11)) {
		free(n);
		return "an inode but no path";
	}
	m->kind = classify(n);
	*name = n;
	return NULL;
}

static int map_cmp(const void *a, const void *b)
{
	const struct smap *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Parse one text into a new ascending, disjoint array. */
static int parse_text(nk__symtab *s, const char *text, size_t ti, size_t ntexts, struct smap **out, size_t *nout,
		      nk_error *err)
{
	struct smap *v = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	const char *p = text;
	char where[48];

	if (ntexts > 1)
		snprintf(where, sizeof where, "maps text %zu, ", ti + 1);
	else
		where[0] = 0;
	while (*p) {
		const char *e = strchr(p, '\n');
		const char *next;
		if (!e)
			e = next = p + strlen(p);
		else
			next = e + 1;
		lineno++;
		if (e == p) { /* an empty line: only the end of the text may have one */
			if (*next) {
				free(v);
				return nk__error(err, NK_EPARSE, "%sline %zu: empty line in maps text", where, lineno);
			}
			break;
		}
		struct smap m = { 0 };
		char *name;
		const char *why = parse_line(p, e, &m, &name);
		if (!why && n && m.lo < v[n - 1].hi)
			why = "mapping not above the previous one";
		if (why) {
			free(name);
			free(v);
			if (!strcmp(why, "out of memory"))
				return nk__error(err, NK_ENOMEM, "maps text: out of memory");
			return nk__error(err, NK_EPARSE, "%sline %zu: %s", where, lineno, why);
		}
		m.name = keep(s, name);
		if (!m.name) {
			free(v);
			return nk__error(err, NK_ENOMEM, "maps text: out of memory");
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct smap *nv = realloc(v, cap * sizeof *nv);
			if (!nv) {
				free(v);
				return nk__error(err, NK_ENOMEM, "maps text: out of memory");
			}
			v = nv;
		}
		v[n++] = m;
		p = next;
	}
	*out = v;
	*nout = n;
	return 0;
}

/*
 * The parts of the old mappings that @p nw (ascending, disjoint) leaves uncovered, plus @p nw.  Each
 * new mapping cuts at most one old mapping in two, so nold + 2 nnew entries always suffice.
 */
static int merge_maps(struct smap **old, size_t *nold, struct smap *nw, size_t nnew)
{
	size_t n = 0;
	struct smap *r = malloc((*nold + 2 * nnew + 1) * sizeof *r);
	if (!r)
		return NK_ENOMEM;
	for (size_t i = 0; i < *nold; i++) {
		struct smap m = (*old)[i];
		size_t a = 0, b = nnew;
		while (a < b) { /* the first new mapping ending above m.lo */
			size_t mid = a + (b - a) / 2;
			if (nw[mid].hi <= m.lo)
				a = mid + 1;
			else
				b = mid;
		}
		uint64_t cur = m.lo;
		for (size_t j = a; j < nnew && nw[j].lo < m.hi && cur < m.hi; j++) {
			if (nw[j].lo > cur) {
				r[n] = m;
				r[n].lo = cur;
				r[n].hi = nw[j].lo;
				r[n].off = m.off + (cur - m.lo);
				n++;
			}
			if (nw[j].hi > cur)
				cur = nw[j].hi;
		}
		if (cur < m.hi) {
			r[n] = m;
			r[n].lo = cur;
			r[n].off = m.off + (cur - m.lo);
			n++;
		}
	}
	if (nnew)
		memcpy(r + n, nw, nnew * sizeof *nw);
	n += nnew;
	qsort(r, n, sizeof *r, map_cmp);
	free(*old);
	*old = r;
	*nold = n;
	return 0;
}

/* ------------------------------------------------------------- objects */

static int objkey_cmp(const struct smap *x, const struct smap *y)
{
	int c = strcmp(x->name, y->name);
	if (c || (c = NK__CMP(x->dmaj, y->dmaj)) || (c = NK__CMP(x->dmin, y->dmin)))
		return c;
	return NK__CMP(x->inode, y->inode);
}

/* qsort has no context argument */
static _Thread_local const struct smap *t_sort_maps;

static int idx_cmp(const void *a, const void *b)
{
	const size_t *x = a, *y = b;
	int c = objkey_cmp(&t_sort_maps[*x], &t_sort_maps[*y]);
	if (c)
		return c;
	return *x < *y ? -1 : *x > *y;
}

static int is_deleted(const char *path)
{
	size_t n = strlen(path);
	return n >= 10 && !strcmp(path + n - 10, " (deleted)");
}

/*
 * The bias that places mapping @p m on a PT_LOAD segment of @p elf: file offset off is at link-time
 * address p_vaddr - p_offset + off.  With @p check, succeed only if some segment gives *bias (and is
 * executable when the mapping is).  Returns 0 or -1.
 */
static int seg_bias(Elf *elf, size_t nph, const struct smap *m, int check, uint64_t *bias)
{
	for (size_t k = 0; k < nph; k++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)k, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		/* mappings start at a page boundary: any page size up to the segment's alignment */
		uint64_t mask = ph.p_align > 0x1000 && !(ph.p_align & (ph.p_align - 1)) ? ph.p_align - 1 : 0xfff;
		if (m->off < (ph.p_offset & ~mask) || m->off >= ph.p_offset + ph.p_filesz)
			continue;
		uint64_t b = m->lo - (ph.p_vaddr - ph.p_offset + m->off);
		if (!check) {
			*bias = b;
			return 0;
		}
		if (b == *bias && (!m->exec || (ph.p_flags & PF_X)))
			return 0;
	}
	return -1;
}

/* Open the object's ELF and find its bias; on any problem a warning and ok = 0. */
static void open_object(nk__symtab *s, struct sobj *o, const size_t *members, size_t nm)
{
	struct nk__os_stat st;
	GElf_Ehdr eh;
	size_t nph;
	int e;

	o->fd = o->dbg_fd = -1;
	/* files mapped without execute permission are data (locale archives, caches, memfds...): no warning */
	int code = 0;
	for (size_t i = 0; i < nm; i++)
		code |= s->maps[members[i]].exec;
#define OWARN(...)                             \
	do {                                   \
		if (code)                      \
			warn(s, __VA_ARGS__); \
	} while (0)
	if (is_deleted(o->path)) {
		OWARN("%s: deleted while mapped", o->path);
		return;
	}
	if (nk__os_stat(o->path, &st, &e)) {
		OWARN("%s: %s", o->path, strerror(e));
		return;
	}
	if (!st.is_reg || st.size < sizeof(Elf64_Ehdr)) {
		OWARN("%s: not an ELF file", o->path);
		return;
	}
	if (o->inode && st.dev_major == o->dmaj && st.dev_minor == o->dmin && st.ino != o->inode) {
		OWARN("%s: replaced since the profile was taken (inode %" PRIu64 ", now %" PRIu64 ")", o->path,
		     o->inode, st.ino);
		return;
	}
	for (size_t i = 0; i < nm; i++)
		if (s->maps[members[i]].off >= st.size) {
			OWARN("%s: shorter than when the profile was taken (changed since)", o->path);
			return;
		}
	o->fd = nk__os_open_read(o->path, &e);
	if (o->fd < 0) {
		o->fd = -1;
		OWARN("%s: %s", o->path, strerror(e));
		return;
	}
	o->elf = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF || !gelf_getehdr(o->elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getphdrnum(o->elf, &nph)) {
		OWARN("%s: not an ELF executable or shared object", o->path);
		return;
	}
	/*
	 * The lowest mapping that maps part of a PT_LOAD segment gives the bias; every other mapping must
	 * agree (a segment at its offset with the same bias, executable if the mapping is), else the file
	 * is not the one that was mapped.
	 */
	size_t i = 0;
	while (i < nm && seg_bias(o->elf, nph, &s->maps[members[i]], 0, &o->bias))
		i++;
	if (i == nm) {
		OWARN("%s: no mapping matches a loadable segment (changed since the profile was taken?)", o->path);
		return;
	}
	for (i++; i < nm; i++)
		if (seg_bias(o->elf, nph, &s->maps[members[i]], 1, &o->bias)) {
			OWARN("%s: segments differ from the mappings (changed since the profile was taken)", o->path);
			return;
		}
	for (size_t k = 0; k < nph; k++) {
		GElf_Phdr ph;
		if (gelf_getphdr(o->elf, (int)k, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > o->end)
			o->end = ph.p_vaddr + ph.p_memsz;
	}
	o->ok = 1;
}
#undef OWARN

static void close_object(struct sobj *o)
{
	if (o->dw)
		dwarf_end(o->dw);
	if (o->dbg_elf)
		elf_end(o->dbg_elf);
	if (o->elf)
		elf_end(o->elf);
	nk__os_close(o->dbg_fd, NULL);
	nk__os_close(o->fd, NULL);
	free(o->funcs);
	free(o->objs);
	free(o->cus);
	free(o->vars);
}

static int build_objects(nk__symtab *s)
{
	size_t nf = 0, *idx;
	for (size_t i = 0; i < s->nmaps; i++)
		nf += s->maps[i].kind == NK__MAP_FILE;
	if (!nf)
		return 0;
	idx = malloc(nf * sizeof *idx);
	s->objs = calloc(nf, sizeof *s->objs);
	if (!idx || !s->objs) {
		free(idx);
		return NK_ENOMEM;
	}
	nf = 0;
	for (size_t i = 0; i < s->nmaps; i++)
		if (s->maps[i].kind == NK__MAP_FILE)
			idx[nf++] = i;
	t_sort_maps = s->maps;
	qsort(idx, nf, sizeof *idx, idx_cmp); /* groups, each in ascending address order */
	/*
	 * One object per load of a file: a run of mappings of one file with increasing offsets.  A file
	 * mapped again from offset 0 (the process mmap()ed it, or loaded it twice) is another object.
	 * Equal offsets right after each other are one load too: the RELRO part of the data segment
	 * maps the same file page as the end of the segment before it (ld.so, -z relro, small files).
	 */
	for (size_t a = 0, b; a < nf; a = b) {
		for (b = a + 1; b < nf && !objkey_cmp(&s->maps[idx[a]], &s->maps[idx[b]]) &&
				(s->maps[idx[b]].off > s->maps[idx[b - 1]].off ||
				 (s->maps[idx[b]].off == s->maps[idx[b - 1]].off &&
				  s->maps[idx[b]].lo == s->maps[idx[b - 1]].hi));
		     b++)
			;
		struct sobj *o = &s->objs[s->nobjs++];
		const struct smap *m = &s->maps[idx[a]];
		o->path = m->name;
		o->inode = m->inode;
		o->dmaj = m->dmaj;
		o->dmin = m->dmin;
		for (size_t i = a; i < b; i++)
			s->maps[idx[i]].obj = s->nobjs;
		open_object(s, o, idx + a, b - a);
	}
	free(idx);
	return 0;
}

int nk__sym_open(const char *const *maps_texts, size_t n, nk__symtab **out, nk_error *err)
{
	nk__symtab *s;
	int rc;

	if (!out || (n && !maps_texts))
		return nk__error(err, NK_EINVAL, "nk__sym_open: NULL argument");
	for (size_t i = 0; i < n; i++)
		if (!maps_texts[i])
			return nk__error(err, NK_EINVAL, "nk__sym_open: maps text %zu is NULL", i + 1);
	if (elf_version(EV_CURRENT) == EV_NONE)
		return nk__error(err, NK_ENOSYS, "libelf: %s", elf_errmsg(-1));
	s = calloc(1, sizeof *s);
	if (!s)
		return nk__error(err, NK_ENOMEM, "nk__sym_open: out of memory");
	for (size_t i = 0; i < n; i++) {
		struct smap *v = NULL;
		size_t nv = 0;
		rc = parse_text(s, maps_texts[i], i, n, &v, &nv, err);
		if (rc)
			goto fail;
		if (!s->maps) {
			s->maps = v;
			s->nmaps = nv;
			continue;
		}
		rc = merge_maps(&s->maps, &s->nmaps, v, nv);
		free(v);
		if (rc) {
			rc = nk__error(err, rc, "maps text: out of memory");
			goto fail;
		}
	}
	rc = build_objects(s);
	if (rc) {
		rc = nk__error(err, rc, "nk__sym_open: out of memory");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	nk__sym_close(s);
	return rc;
}

void nk__sym_close(nk__symtab *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nobjs; i++)
		close_object(&s->objs[i]);
	for (size_t i = 0; i < s->nstrs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->objs);
	free(s->maps);
	free(s->warn);
	free(s);
}

const char *nk__sym_warnings(const nk__symtab *s)
{
	return s && s->warn ? s->warn : "";
}

static const struct smap *find_map(const nk__symtab *s, uint64_t addr)
{
	size_t a = 0, b = s->nmaps;
	while (a < b) { /* first mapping ending above addr */
		size_t mid = a + (b - a) / 2;
		if (s->maps[mid].hi <= addr)
			a = mid + 1;
		else
			b = mid;
	}
	if (a < s->nmaps && s->maps[a].lo <= addr)
		return &s->maps[a];
	return NULL;
}

static struct sobj *data_object_of(const nk__symtab *s, const struct smap *m, uint64_t addr);

int nk__sym_mapping(nk__symtab *s, uint64_t addr, const char **name, uint64_t *lo, uint64_t *hi)
{
	const struct smap *m = s ? find_map(s, addr) : NULL;
	if (!m) {
		if (name)
			*name = NULL;
		if (lo)
			*lo = 0;
		if (hi)
			*hi = 0;
		return NK__MAP_NONE;
	}
	int kind = m->kind;
	const struct sobj *o;
	if (name)
		*name = m->kind == NK__MAP_ANON && !m->name[0] ? "[anon]" : m->name;
	if (kind == NK__MAP_ANON && (o = data_object_of(s, m, addr))) { /* .bss past the file's pages */
		kind = NK__MAP_FILE;
		if (name)
			*name = o->path;
	}
	if (lo)
		*lo = m->lo;
	if (hi)
		*hi = m->hi;
	return kind;
}

/* -------------------------------------------------------------- ELF symbols */

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	int c;
	if ((c = NK__CMP(x->addr, y->addr)) || (c = NK__CMP(y->rank, x->rank))) /* the best rank first */
		return c;
	return strcmp(x->name, y->name);
}

static int push_sym(struct fsym **v, size_t *n, size_t *cap, struct fsym f)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct fsym *nv = realloc(*v, c * sizeof *nv);
		if (!nv)
			return -1;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = f;
	return 0;
}

/* Sort, and keep the best-ranked symbol of each address. */
static void sort_syms(struct fsym *v, size_t *n)
{
	size_t k = 0;
	if (!*n)
		return;
	qsort(v, *n, sizeof *v, fsym_cmp);
	for (size_t i = 1; i < *n; i++)
		if (v[i].addr != v[k].addr)
			v[++k] = v[i];
	*n = k + 1;
}

static Elf_Scn *find_section(Elf *elf, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return scn;
	return NULL;
}

static int has_section_named(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, name))
			return 1;
	}
	return 0;
}

/* The separate debug file of the object, by build id, if installed. */
static void open_debug_file(struct sobj *o)
{
	const void *id;
	ssize_t len = dwelf_elf_gnu_build_id(o->elf, &id);
	char path[64 + 2 * 64];
	const unsigned char *b = id;
	int k;

	if (len < 2 || len > 64)
		return;
	k = snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%02x/", b[0]);
	for (ssize_t i = 1; i < len; i++)
		k += snprintf(path + k, sizeof path - (size_t)k, "%02x", b[i]);
	snprintf(path + k, sizeof path - (size_t)k, ".debug");
	o->dbg_fd = nk__os_open_read(path, NULL);
	if (o->dbg_fd < 0) {
		o->dbg_fd = -1;
		return;
	}
	o->dbg_elf = elf_begin(o->dbg_fd, ELF_C_READ_MMAP, NULL);
	if (!o->dbg_elf || elf_kind(o->dbg_elf) != ELF_K_ELF) {
		if (o->dbg_elf)
			elf_end(o->dbg_elf);
		o->dbg_elf = NULL;
		nk__os_close(o->dbg_fd, NULL);
		o->dbg_fd = -1;
	}
}

static void read_symbols(struct sobj *o, Elf *elf, Elf_Scn *scn)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t cf = 0, co = 0;

	if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
		return;
	size_t n = sh.sh_size / sh.sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
		    !sym.st_value)
			continue;
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT)
			continue;
		if (!(name = elf_strptr(elf, sh.sh_link, sym.st_name)) || !*name)
			continue;
		struct fsym f = { .addr = sym.st_value,
				  .size = sym.st_size,
				  .name = name,
				  .rank = (bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0) + (sym.st_size != 0) };
		if (type == STT_OBJECT) {
			GElf_Shdr ss;
			Elf_Scn *sec = elf_getscn(elf, sym.st_shndx);
			if (!sec || !gelf_getshdr(sec, &ss) || (ss.sh_flags & SHF_TLS) || !(ss.sh_flags & SHF_ALLOC))
				continue;
			if (push_sym(&o->objs, &o->nobjs, &co, f))
				return;
		} else if (push_sym(&o->funcs, &o->nfuncs, &cf, f)) {
			return;
		}
	}
}

static void load_symbols(struct sobj *o)
{
	Elf_Scn *scn;

	if (o->syms_loaded)
		return;
	o->syms_loaded = 1;
	open_debug_file(o);
	if (o->dbg_elf && (scn = find_section(o->dbg_elf, SHT_SYMTAB)))
		read_symbols(o, o->dbg_elf, scn);
	else if ((scn = find_section(o->elf, SHT_SYMTAB)))
		read_symbols(o, o->elf, scn);
	else if ((scn = find_section(o->elf, SHT_DYNSYM)))
		read_symbols(o, o->elf, scn);
	sort_syms(o->funcs, &o->nfuncs);
	sort_syms(o->objs, &o->nobjs);
}

/* The symbol containing link-time address a (a sized one, or an unsized one exactly at a). */
static struct fsym *find_sym(struct fsym *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* first symbol above a */
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
		struct fsym *f = &v[i - 1];
		if (a == f->addr || a - f->addr < f->size)
			return f;
	}
	return NULL;
}

/* ---------------------------------------------------------------- DWARF */

static int cur_cmp(const void *a, const void *b)
{
	const struct curange *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void load_dwarf(struct sobj *o)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t utype;
	size_t cap = 0;

	if (o->dw_loaded)
		return;
	o->dw_loaded = 1;
	load_symbols(o); /* opens the debug file */
	if (o->dbg_elf && has_section_named(o->dbg_elf, ".debug_info"))
		o->dw = dwarf_begin_elf(o->dbg_elf, DWARF_C_READ, NULL);
	if (!o->dw && has_section_named(o->elf, ".debug_info"))
		o->dw = dwarf_begin_elf(o->elf, DWARF_C_READ, NULL);
	if (!o->dw)
		return;
	while (dwarf_get_units(o->dw, cu, &cu, NULL, &utype, &cudie, NULL) == 0) {
		ptrdiff_t off = 0;
		Dwarf_Addr base, lo, hi;
		if (utype != DW_UT_compile && utype != DW_UT_partial)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (o->ncus == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct curange *v = realloc(o->cus, c * sizeof *v);
				if (!v)
					goto sort;
				o->cus = v;
				cap = c;
			}
			o->cus[o->ncus++] = (struct curange){ lo, hi, dwarf_dieoffset(&cudie) };
		}
	}
sort:
	if (o->ncus)
		qsort(o->cus, o->ncus, sizeof *o->cus, cur_cmp);
}

static int find_cu(struct sobj *o, uint64_t a, Dwarf_Die *cudie)
{
	size_t lo = 0, hi = o->ncus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->cus[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++)
		if (a < o->cus[i - 1].hi)
			return dwarf_offdie(o->dw, o->cus[i - 1].cu, cudie) ? 0 : -1;
	return -1;
}

static void add_var(struct sobj *o, Dwarf_Die *die, size_t *cap)
{
	Dwarf_Attribute at;
	Dwarf_Op *ops;
	size_t nops;

	Dwarf_Attribute ax;
	Dwarf_Addr addr;

	if (!dwarf_attr(die, DW_AT_location, &at) || dwarf_getlocation(&at, &ops, &nops) || nops != 1)
		return;
	if (ops[0].atom == DW_OP_addr)
		addr = ops[0].number;
	else if ((ops[0].atom == DW_OP_addrx || ops[0].atom == DW_OP_GNU_addr_index) && /* DWARF 5 (clang) */
		 !dwarf_getlocation_attr(&at, &ops[0], &ax) && !dwarf_formaddr(&ax, &addr))
		;
	else
		return;
	if (!addr)
		return;
	if (o->nvars == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct dvar *v = realloc(o->vars, c * sizeof *v);
		if (!v)
			return;
		o->vars = v;
		*cap = c;
	}
	o->vars[o->nvars++] = (struct dvar){ .addr = addr, .die = dwarf_dieoffset(die) };
}

static void walk_vars(struct sobj *o, Dwarf_Die *die, int depth, size_t *cap)
{
	do {
		int tag = dwarf_tag(die);
		Dwarf_Die child;
		if (tag == DW_TAG_variable)
			add_var(o, die, cap);
		if (depth < 32 && tag != DW_TAG_structure_type && tag != DW_TAG_class_type &&
		    tag != DW_TAG_union_type && tag != DW_TAG_enumeration_type && tag != DW_TAG_subroutine_type &&
		    dwarf_haschildren(die) > 0 && dwarf_child(die, &child) == 0)
			walk_vars(o, &child, depth + 1, cap);
	} while (dwarf_siblingof(die, die) == 0);
}

static int dvar_cmp(const void *a, const void *b)
{
	const struct dvar *x = a, *y = b;
	int c = NK__CMP(x->addr, y->addr);
	return c ? c : NK__CMP(x->die, y->die);
}

static void load_vars(struct sobj *o)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, child;
	uint8_t utype;
	size_t cap = 0;

	if (o->vars_loaded)
		return;
	o->vars_loaded = 1;
	load_dwarf(o);
	if (!o->dw)
		return;
	while (dwarf_get_units(o->dw, cu, &cu, NULL, &utype, &cudie, NULL) == 0)
		if ((utype == DW_UT_compile || utype == DW_UT_partial) && dwarf_child(&cudie, &child) == 0)
			walk_vars(o, &child, 0, &cap);
	if (o->nvars)
		qsort(o->vars, o->nvars, sizeof *o->vars, dvar_cmp);
}

static const char *tag_word(int tag)
{
	switch (tag) {
	case DW_TAG_structure_type:
		return "struct ";
	case DW_TAG_union_type:
		return "union ";
	case DW_TAG_enumeration_type:
		return "enum ";
	case DW_TAG_class_type:
		return "class ";
	default:
		return "";
	}
}

/* C-like text of a type ("double[4096]", "struct grid", "int *"); appends to buf. */
static void type_text(Dwarf_Die *t, char *buf, size_t cap, int depth)
{
	size_t len = strlen(buf);
	Dwarf_Attribute at;
	Dwarf_Die inner, *in = NULL;
	const char *name;

#define ADD(...) snprintf(buf + len, cap - len, __VA_ARGS__)
	if (len + 1 >= cap)
		return;
	if (!t) {
		ADD("void");
		return;
	}
	if (depth > 12) {
		ADD("...");
		return;
	}
	if (dwarf_attr_integrate(t, DW_AT_type, &at) && dwarf_formref_die(&at, &inner))
		in = &inner;
	int tag = dwarf_tag(t);
	switch (tag) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type: {
		const char *op = tag == DW_TAG_pointer_type ? "*" : tag == DW_TAG_reference_type ? "&" : "&&";
		if (in && dwarf_tag(in) == DW_TAG_subroutine_type) {
			Dwarf_Die ret, *rp = NULL;
			if (dwarf_attr_integrate(in, DW_AT_type, &at) && dwarf_formref_die(&at, &ret))
				rp = &ret;
			type_text(rp, buf, cap, depth + 1);
			len = strlen(buf);
			ADD(" (%s)()", op);
			return;
		}
		type_text(in, buf, cap, depth + 1);
		len = strlen(buf);
		ADD(len && buf[len - 1] == '*' ? "%s" : " %s", op);
		return;
	}
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type: {
		const char *q = tag == DW_TAG_const_type      ? "const"
				: tag == DW_TAG_volatile_type ? "volatile"
				: tag == DW_TAG_restrict_type ? "restrict"
							      : "_Atomic";
		if (in && dwarf_tag(in) == DW_TAG_pointer_type) {
			type_text(in, buf, cap, depth + 1);
			len = strlen(buf);
			ADD(" %s", q);
		} else {
			ADD("%s ", q);
			type_text(in, buf, cap, depth + 1);
		}
		return;
	}
	case DW_TAG_array_type: {
		Dwarf_Die sub;
		type_text(in, buf, cap, depth + 1);
		if (dwarf_child(t, &sub) != 0) {
			len = strlen(buf);
			ADD("[]");
			return;
		}
		do {
			Dwarf_Word w;
			if (dwarf_tag(&sub) != DW_TAG_subrange_type)
				continue;
			len = strlen(buf);
			if (len + 1 >= cap)
				return;
			if (dwarf_attr_integrate(&sub, DW_AT_count, &at) && !dwarf_formudata(&at, &w))
				ADD("[%" PRIu64 "]", (uint64_t)w);
			else if (dwarf_attr_integrate(&sub, DW_AT_upper_bound, &at) && !dwarf_formudata(&at, &w))
				ADD("[%" PRIu64 "]", (uint64_t)w + 1);
			else
				ADD("[]");
		} while (dwarf_siblingof(&sub, &sub) == 0);
		return;
	}
	case DW_TAG_subroutine_type:
		type_text(in, buf, cap, depth + 1);
		len = strlen(buf);
		ADD(" ()");
		return;
	default:
		name = dwarf_diename(t);
		ADD("%s%s", tag_word(tag), name ? name : tag_word(tag)[0] ? "{...}" : "?");
		return;
	}
#undef ADD
}

static const char *keep_copy_s(nk__symtab *s, const char *str)
{
	return str ? keep_copy(s, str) : NULL;
}

static void fill_var(nk__symtab *s, struct sobj *o, struct dvar *v)
{
	Dwarf_Die die, type, *tp = NULL;
	Dwarf_Attribute at;
	Dwarf_Word size;
	char buf[TYPE_TEXT_MAX];
	int line;

	if (v->done)
		return;
	v->done = 1;
	if (!dwarf_offdie(o->dw, v->die, &die))
		return;
	if (dwarf_attr_integrate(&die, DW_AT_name, &at))
		v->name = dwarf_formstring(&at);
	if (dwarf_attr_integrate(&die, DW_AT_type, &at) && dwarf_formref_die(&at, &type))
		tp = &type;
	buf[0] = 0;
	type_text(tp, buf, sizeof buf, 0);
	v->type = keep_copy_s(s, buf);
	if (tp && !dwarf_aggregate_size(tp, &size))
		v->size = size;
	v->decl_file = dwarf_decl_file(&die);
	if (!dwarf_decl_line(&die, &line))
		v->decl_line = line;
}

static struct dvar *var_at(struct sobj *o, uint64_t a, int containing)
{
	size_t lo = 0, hi = o->nvars;
	while (lo < hi) { /* first var above a */
		size_t mid = lo + (hi - lo) / 2;
		if (o->vars[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (!containing) {
		/* several DIEs may declare one address (definitions in several CUs): the first */
		size_t i = lo - 1;
		if (o->vars[i].addr != a)
			return NULL;
		while (i > 0 && o->vars[i - 1].addr == a)
			i--;
		return &o->vars[i];
	}
	return &o->vars[lo - 1];
}

/* ----------------------------------------------------------- the lookups */

static struct sobj *object_of(nk__symtab *s, const struct smap *m)
{
	return m && m->obj ? &s->objs[m->obj - 1] : NULL;
}

/*
 * The object of a data address: also the end of .bss, in the anonymous mapping right after the
 * object's last one (within the object's extent).
 */
static struct sobj *data_object_of(const nk__symtab *s, const struct smap *m, uint64_t addr)
{
	/* Walk back over adjacent unnamed anonymous pieces: a sampler that revoked
	 * pages of .bss (or the program's own mprotect) splits that mapping. */
	const struct smap *f = m;
	while (f && f->kind == NK__MAP_ANON && !f->name[0] && f > s->maps && f[-1].hi == f->lo && !f[-1].obj)
		f--;
	if (f && f->kind == NK__MAP_ANON && !f->name[0] && f > s->maps && f[-1].hi == f->lo && f[-1].obj) {
		struct sobj *o = &s->objs[f[-1].obj - 1];
		return o->ok && addr - o->bias < o->end ? o : NULL;
	}
	return m && m->obj ? &s->objs[m->obj - 1] : NULL;
}

int nk__sym_ip(nk__symtab *s, uint64_t ip, struct nk__sym_loc *out)
{
	const struct smap *m;
	struct sobj *o;
	Dwarf_Die cudie;

	if (!out)
		return 0;
	memset(out, 0, sizeof *out);
	if (!s || !(m = find_map(s, ip)) || m->kind != NK__MAP_FILE)
		return 0;
	o = object_of(s, m);
	out->object = m->name;
	if (!o || !o->ok) {
		out->offset = ip - m->lo + m->off; /* file offset */
		return 1;
	}
	out->offset = ip - o->bias;
	uint64_t a = ip - o->bias;
	load_symbols(o);
	struct fsym *f = find_sym(o->funcs, o->nfuncs, a);
	if (f)
		out->function = sym_name(s, f);
	load_dwarf(o);
	if (o->dw && find_cu(o, a, &cudie) == 0) {
		Dwarf_Line *l = dwarf_getsrc_die(&cudie, a);
		int line;
		if (l && !dwarf_lineno(l, &line)) {
			out->line = line;
			out->file = dwarf_linesrc(l, NULL, NULL);
		}
		if (!out->function) {
			Dwarf_Die *scopes = NULL;
			int ns = dwarf_getscopes(&cudie, a, &scopes);
			for (int i = 0; i < ns; i++)
				if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
					out->function = demangle(s, dwarf_diename(&scopes[i]));
					break;
				}
			free(scopes);
		}
	}
	return 1;
}

int nk__sym_data(nk__symtab *s, uint64_t addr, struct nk__sym_var *out)
{
	const struct smap *m;
	struct sobj *o;

	if (!out)
		return 0;
	memset(out, 0, sizeof *out);
	if (!s || !(m = find_map(s, addr)) || !(o = data_object_of(s, m, addr)) || !o->ok)
		return 0;
	uint64_t a = addr - o->bias;
	load_symbols(o);
	load_vars(o);
	struct fsym *f = find_sym(o->objs, o->nobjs, a);
	struct dvar *v = NULL;
	if (f) {
		v = o->nvars ? var_at(o, f->addr, 0) : NULL;
		out->name = sym_name(s, f);
		out->addr = f->addr + o->bias;
		out->size = f->size;
	} else if (o->nvars) {
		v = var_at(o, a, 1);
		if (v)
			fill_var(s, o, v);
		if (!v || !v->name || !(a == v->addr || a - v->addr < v->size))
			return 0;
		out->name = v->name;
		out->addr = v->addr + o->bias;
		out->size = v->size;
	} else {
		return 0;
	}
	if (v) {
		fill_var(s, o, v);
		/* a static local is "count.1" in .symtab and "count" in DWARF */
		if (f && v->name && f->demangled == 1 && strchr(f->name, '.'))
			out->name = v->name;
		else if (!f)
			out->name = demangle(s, v->name);
		out->type = v->type;
		out->decl_file = v->decl_file;
		out->decl_line = v->decl_line;
		if (!out->size)
			out->size = v->size;
	}
	out->object = o->path;
	return 1;
}
