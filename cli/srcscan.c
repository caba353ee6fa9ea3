/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source: the scan, with libclang's C API (clang 14).
 *
 * Why two parses: clang 14's C API shows an OpenMP directive's associated
 * statement as a CapturedStmt whose only children are the captured
 * variables, so the loop body of `#pragma omp parallel for` cannot be
 * visited.  The file is parsed once with -fopenmp (the program must be valid
 * OpenMP: its errors are the ones reported) and once without it (the pragmas
 * are then ignored and every statement is visible); the directives are read
 * from the file's tokens (`# pragma omp ...` up to the end of its logical
 * line) and bound to the statement that starts at the first token after them.
 * The C API has no accessor for OpenMP clauses or operator kinds either, so
 * schedule/sharing clauses and assignment operators are read from tokens too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srcadv.h"

#ifndef NK_HAVE_LIBCLANG

int srcadv_have_libclang(void)
{
	return 0;
}

int srcadv_scan_file(const char *path, const char *src, size_t len, const char *const *args, int nargs,
		     struct srcadv_scan *s, char *msg, size_t msgcap)
{
	snprintf(msg, msgcap, "numakit was built without libclang (install libclang-dev and rebuild)");
	return SRCADV_ENOLIBCLANG;
}

#else

#include <clang-c/Index.h>

int srcadv_have_libclang(void)
{
	return 1;
}

#define NAMES_MAX 1024

/* One `#pragma omp` directive, from the tokens. */
struct dir {
	unsigned line;
	unsigned stmt_off;  /* offset of the first token after it: its statement starts there */
	int has_stmt;
	int parallel, loop, single;
	int sched;
	char chunk[32];
	char names[6][NAMES_MAX]; /* per enum srcadv_sharing: "|a|b|" */
	char loopvar[SRCADV_NAME_MAX];
};

struct tok {
	CXTokenKind kind;
	unsigned off, end, line;
	char *text;
};

/* A node of the walk: the cursor and the directives bound to it. */
struct frame {
	CXCursor c;
	enum CXCursorKind kind;
	unsigned start, end; /* offsets in the main file (expansion locations) */
	int dirs[3];
	int ndirs;
};

#define MAX_DEPTH 512

struct tracked {
	char *usr;
	int confirmed; /* pointers: an allocation was seen */
};

struct scan {
	CXTranslationUnit tu;
	CXFile file;
	const char *src;
	size_t len;
	struct tok *toks;
	unsigned ntoks;
	struct dir *dirs;
	size_t ndirs;
	struct frame st[MAX_DEPTH];
	int depth;
	struct srcadv_scan *s;
	struct tracked *tr; /* parallel to s->arr until the compaction at the end */
	size_t ntr;
	int in_main;        /* depth of main's FunctionDecl frame, 0 when outside */
	unsigned first_decl_line;
	int oom;
};

static int str_eq(CXString x, const char *y)
{
	const char *c = clang_getCString(x);
	int r = c && !strcmp(c, y);
	clang_disposeString(x);
	return r;
}

static void copy_cx(CXString x, char *buf, size_t cap)
{
	const char *c = clang_getCString(x);
	snprintf(buf, cap, "%s", c ? c : "");
	clang_disposeString(x);
}

static unsigned off_of(CXSourceLocation l, unsigned *line)
{
	unsigned o = 0, ln = 0;
	clang_getExpansionLocation(l, NULL, &ln, NULL, &o);
	if (line)
		*line = ln;
	return o;
}

static unsigned line_of(CXCursor c)
{
	unsigned ln = 0;
	off_of(clang_getCursorLocation(c), &ln);
	return ln;
}

/* Leading whitespace of the line holding offset @p off. */
static void indent_at(const struct scan *sc, unsigned off, char *buf, size_t cap)
{
	size_t b = off, i = 0;
	while (b > 0 && sc->src[b - 1] != '\n')
		b--;
	while (b + i < sc->len && (sc->src[b + i] == ' ' || sc->src[b + i] == '\t') && i + 1 < cap) {
		buf[i] = sc->src[b + i];
		i++;
	}
	buf[i] = '\0';
}

/* Is the rest of the line after @p off blank (or a comment)? */
static int rest_blank(const struct scan *sc, unsigned off)
{
	for (size_t i = off; i < sc->len && sc->src[i] != '\n'; i++) {
		if (sc->src[i] == '/' && i + 1 < sc->len && (sc->src[i + 1] == '/' || sc->src[i + 1] == '*'))
			return 1;
		if (sc->src[i] != ' ' && sc->src[i] != '\t' && sc->src[i] != '\r' && sc->src[i] != ';')
			return 0;
	}
	return 1;
}

/* The index of the first token at or after @p off. */
static unsigned tok_at(const struct scan *sc, unsigned off)
{
	unsigned lo = 0, hi = sc->ntoks;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (sc->toks[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int tok_is(const struct scan *sc, unsigned i, const char *t)
{
	return i < sc->ntoks && !strcmp(sc->toks[i].text, t);
}

/* ---- directives ---- */

static int is_dir_word(const char *w)
{
	static const char *const words[] = { "parallel", "for", "simd", "single", "master", "masked", "sections",
					     "section", "critical", "barrier", "atomic", "task", "taskloop", "teams",
					     "distribute", "target", "ordered", "flush", "taskwait", "taskgroup",
					     "loop", "declare", "threadprivate", "cancel", "scan", "end", "data",
					     "update", "enter", "exit", "requires", "depobj", "taskyield", NULL };
	for (int i = 0; words[i]; i++)
		if (!strcmp(w, words[i]))
			return 1;
	return 0;
}

static void add_name(char *list, const char *name)
{
	size_t n = strlen(list);
	if (!n && NAMES_MAX > 1)
		list[n++] = '|', list[n] = '\0';
	if (n + strlen(name) + 2 < NAMES_MAX)
		snprintf(list + n, NAMES_MAX - n, "%s|", name);
}

/* +1 for an opening bracket token, -1 for a closing one, 0 otherwise. */
static int bracket(const char *t)
{
	return !strcmp(t, "(") || !strcmp(t, "[") ? 1 : !strcmp(t, ")") || !strcmp(t, "]") ? -1 : 0;
}

/* The names of a clause list (tokens a..b exclusive): each item's first identifier, after the list's
 * modifier when it has one ("reduction(+: x)", "lastprivate(conditional: x)"). */
static void clause_names(const struct scan *sc, unsigned a, unsigned b, char *list)
{
	int depth = 0, item = 1;

	for (unsigned i = a; i < b; i++) {
		if (depth == 0 && !strcmp(sc->toks[i].text, ":"))
			a = i + 1;
		depth += bracket(sc->toks[i].text);
	}
	depth = 0;
	for (unsigned i = a; i < b; i++) {
		const char *t = sc->toks[i].text;
		int d = bracket(t);
		if (d)
			depth += d;
		else if (depth == 0 && !strcmp(t, ","))
			item = 1;
		else if (depth == 0 && item && sc->toks[i].kind == CXToken_Identifier) {
			add_name(list, t);
			item = 0;
		}
	}
}

/* The text of tokens a..b exclusive, as written. */
static void tok_text(const struct scan *sc, unsigned a, unsigned b, char *buf, size_t cap)
{
	if (a >= b) {
		buf[0] = '\0';
		return;
	}
	size_t st = sc->toks[a].off, en = sc->toks[b - 1].end;
	snprintf(buf, cap, "%.*s", (int)(en - st), sc->src + st);
}

/* Parse the directive whose '#' is token @p i; returns the index past it. */
static unsigned parse_dir(struct scan *sc, unsigned i, struct dir *d)
{
	unsigned line = sc->toks[i].line, j = i + 3, end;
	int standalone = 0; /* no associated statement */

	memset(d, 0, sizeof *d);
	d->line = line;
	/* the logical line: continued while a line ends in a backslash */
	for (end = i + 1; end < sc->ntoks; end++) {
		unsigned pl = sc->toks[end - 1].line, l = sc->toks[end].line;
		if (l == pl)
			continue;
		/* did line pl end with '\'? */
		size_t o = sc->toks[end - 1].end;
		while (o < sc->len && sc->src[o] != '\n')
			o++;
		size_t k = o;
		while (k > 0 && (sc->src[k - 1] == ' ' || sc->src[k - 1] == '\t' || sc->src[k - 1] == '\r'))
			k--;
		if (l == pl + 1 && k > 0 && sc->src[k - 1] == '\\')
			continue;
		break;
	}
	for (; j < end && (sc->toks[j].kind == CXToken_Identifier || sc->toks[j].kind == CXToken_Keyword) &&
	       is_dir_word(sc->toks[j].text) &&
	       !tok_is(sc, j + 1, "(");
	     j++) {
		const char *w = sc->toks[j].text;
		if (!strcmp(w, "parallel"))
			d->parallel = 1;
		else if (!strcmp(w, "for"))
			d->loop = 1;
		else if (!strcmp(w, "single") || !strcmp(w, "master") || !strcmp(w, "masked"))
			d->single = 1;
		else if (j == i + 3 && (!strcmp(w, "barrier") || !strcmp(w, "flush") || !strcmp(w, "taskwait") ||
					!strcmp(w, "taskyield") || !strcmp(w, "threadprivate") || !strcmp(w, "declare") ||
					!strcmp(w, "end") || !strcmp(w, "cancel") || !strcmp(w, "requires") ||
					!strcmp(w, "depobj")))
			standalone = 1;
	}
	/* clauses: NAME ( ... ) */
	while (j < end) {
		if (sc->toks[j].kind != CXToken_Identifier && sc->toks[j].kind != CXToken_Keyword) {
			j++;
			continue;
		}
		const char *c = sc->toks[j].text;
		unsigned a = j + 1, b;
		if (!tok_is(sc, a, "(")) {
			j++;
			continue;
		}
		int depth = 0;
		for (b = a; b < end; b++) {
			if (!strcmp(sc->toks[b].text, "("))
				depth++;
			else if (!strcmp(sc->toks[b].text, ")") && --depth == 0)
				break;
		}
		a++; /* inside the parentheses: a..b */
		if (!strcmp(c, "schedule")) {
			unsigned k = a;
			for (unsigned x = a; x < b; x++)
				if (!strcmp(sc->toks[x].text, ":"))
					k = x + 1; /* modifiers */
			if (k < b) {
				static const char *const kinds[] = { "", "static", "dynamic", "guided", "auto", "runtime" };
				for (int x = 1; x <= SRCADV_SCHED_RUNTIME; x++)
					if (!strcmp(sc->toks[k].text, kinds[x]))
						d->sched = x;
				if (tok_is(sc, k + 1, ","))
					tok_text(sc, k + 2, b, d->chunk, sizeof d->chunk);
			}
		} else if (!strcmp(c, "shared")) {
			clause_names(sc, a, b, d->names[SRCADV_SHARED_CLAUSE]);
		} else if (!strcmp(c, "private")) {
			clause_names(sc, a, b, d->names[SRCADV_PRIVATE]);
		} else if (!strcmp(c, "firstprivate")) {
			clause_names(sc, a, b, d->names[SRCADV_FIRSTPRIVATE]);
		} else if (!strcmp(c, "lastprivate")) {
			clause_names(sc, a, b, d->names[SRCADV_LASTPRIVATE]);
		} else if (!strcmp(c, "reduction")) {
			clause_names(sc, a, b, d->names[SRCADV_REDUCTION]);
		}
		j = b + 1;
	}
	d->stmt_off = end < sc->ntoks ? sc->toks[end].off : (unsigned)sc->len;
	d->has_stmt = end < sc->ntoks && !standalone;
	return end;
}

static int find_dirs(struct scan *sc)
{
	size_t cap = 0;

	for (unsigned i = 0; i < sc->ntoks; i++) {
		if (strcmp(sc->toks[i].text, "#") || (i && sc->toks[i - 1].line == sc->toks[i].line) ||
		    !tok_is(sc, i + 1, "pragma") || !tok_is(sc, i + 2, "omp") ||
		    sc->toks[i + 1].line != sc->toks[i].line)
			continue;
		if (sc->ndirs == cap) {
			cap = cap ? 2 * cap : 16;
			struct dir *d = realloc(sc->dirs, cap * sizeof *d);
			if (!d)
				return -1;
			sc->dirs = d;
		}
		unsigned next = parse_dir(sc, i, &sc->dirs[sc->ndirs++]);
		i = next ? next - 1 : i;
	}
	/* directives written one above the other bind to the same statement */
	for (size_t k = sc->ndirs; k-- > 1;) {
		struct dir *d = &sc->dirs[k - 1];
		unsigned t = tok_at(sc, d->stmt_off);
		if (t < sc->ntoks && !strcmp(sc->toks[t].text, "#") && sc->toks[t].line == sc->dirs[k].line)
			d->stmt_off = sc->dirs[k].stmt_off;
	}
	return 0;
}

/* ---- the walk ---- */

static int find_tracked(const struct scan *sc, CXCursor decl)
{
	CXString u = clang_getCursorUSR(decl);
	const char *us = clang_getCString(u);
	int r = -1;

	for (size_t i = 0; us && us[0] && i < sc->s->n; i++)
		if (!strcmp(sc->tr[i].usr, us)) {
			r = (int)i;
			break;
		}
	clang_disposeString(u);
	return r;
}

static struct srcadv_array *track(struct scan *sc, CXCursor decl, int kind, int confirmed)
{
	char name[SRCADV_NAME_MAX];
	CXString u = clang_getCursorUSR(decl);
	char *usr = strdup(clang_getCString(u) ? clang_getCString(u) : "");

	clang_disposeString(u);
	copy_cx(clang_getCursorSpelling(decl), name, sizeof name);
	struct tracked *t = realloc(sc->tr, (sc->s->n + 1) * sizeof *t);
	if (!usr || !t) {
		free(usr);
		if (t)
			sc->tr = t;
		sc->oom = 1;
		return NULL;
	}
	sc->tr = t;
	struct srcadv_array *a = srcadv_add_array(sc->s, name);
	if (!a) {
		free(usr);
		sc->oom = 1;
		return NULL;
	}
	sc->tr[sc->s->n - 1].usr = usr;
	sc->tr[sc->s->n - 1].confirmed = confirmed;
	sc->ntr = sc->s->n;
	a->kind = kind;
	a->decl_line = line_of(decl);
	copy_cx(clang_getTypeSpelling(clang_getCursorType(decl)), a->type, sizeof a->type);
	return a;
}

/* Skip implicit casts and parentheses downwards: the first interesting child. */
struct first_child {
	CXCursor c;
	int found;
};

static enum CXChildVisitResult first_child_v(CXCursor c, CXCursor parent, CXClientData data)
{
	struct first_child *f = data;
	f->c = c;
	f->found = 1;
	return CXChildVisit_Break;
}

static enum CXChildVisitResult last_child_v(CXCursor c, CXCursor parent, CXClientData data)
{
	struct first_child *f = data;
	f->c = c;
	f->found = 1;
	return CXChildVisit_Continue;
}

static CXCursor strip(CXCursor c)
{
	for (int i = 0; i < 16; i++) {
		enum CXCursorKind k = clang_getCursorKind(c);
		if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr && k != CXCursor_CStyleCastExpr)
			break;
		struct first_child f = { clang_getNullCursor(), 0 };
		clang_visitChildren(c, first_child_v, &f);
		if (!f.found)
			break;
		c = f.c;
	}
	return c;
}

static int alloc_kind(CXCursor call)
{
	static const char *const fns[] = { "malloc", "calloc", "aligned_alloc", "posix_memalign", NULL };
	if (clang_getCursorKind(call) != CXCursor_CallExpr)
		return -1;
	for (int i = 0; fns[i]; i++)
		if (str_eq(clang_getCursorSpelling(call), fns[i]))
			return i;
	return -1;
}

/* The source text of @p c; -1 when it does not fit (or is empty). */
static int cursor_text(const struct scan *sc, CXCursor c, char *buf, size_t cap)
{
	CXSourceRange r = clang_getCursorExtent(c);
	unsigned a = off_of(clang_getRangeStart(r), NULL), b = off_of(clang_getRangeEnd(r), NULL);
	if (b < a || b > sc->len)
		b = a;
	snprintf(buf, cap, "%.*s", (int)(b - a), sc->src + a);
	return b > a && b - a < cap ? 0 : -1;
}

static uint64_t eval_u64(CXCursor c)
{
	CXEvalResult e = clang_Cursor_Evaluate(c);
	uint64_t v = 0;
	if (e) {
		if (clang_EvalResult_getKind(e) == CXEval_Int) {
			long long x = clang_EvalResult_getAsLongLong(e);
			v = x > 0 ? (uint64_t)x : 0;
		}
		clang_EvalResult_dispose(e);
	}
	return v;
}

/* Can the expression @p c be evaluated again after the allocation (no side effect, no call)? */
static int pure_expr(const struct scan *sc, CXCursor c)
{
	CXSourceRange r = clang_getCursorExtent(c);
	unsigned a = tok_at(sc, off_of(clang_getRangeStart(r), NULL)), b = off_of(clang_getRangeEnd(r), NULL);
	static const char *const bad[] = { "++", "--", "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=",
					   "^=", NULL };

	for (; a < sc->ntoks && sc->toks[a].off < b; a++) {
		for (int i = 0; bad[i]; i++)
			if (!strcmp(sc->toks[a].text, bad[i]))
				return 0;
		if (sc->toks[a].kind == CXToken_Identifier && a + 1 < sc->ntoks && sc->toks[a + 1].off < b &&
		    !strcmp(sc->toks[a + 1].text, "("))
			return 0;
	}
	return 1;
}

/* The statement holding frame @p k that is a direct child of a compound statement; -1 when none. */
static int stmt_frame(const struct scan *sc, int k)
{
	for (; k > 0; k--)
		if (sc->st[k - 1].kind == CXCursor_CompoundStmt)
			return k;
	return -1;
}

/* Record the allocation @p call (kind @p ak) of array @p idx, statement at frame @p k. */
static void record_alloc(struct scan *sc, int idx, CXCursor call, int ak, int k)
{
	struct srcadv_array *a = &sc->s->arr[idx];
	static const char *const names[] = { "malloc", "calloc", "aligned_alloc", "posix_memalign" };
	char x[480], y[480];
	int sf;

	if (sc->tr[idx].confirmed)
		return; /* the first allocation is the one placed */
	sc->tr[idx].confirmed = 1;
	a->kind = SRCADV_MAIN_HEAP;
	snprintf(a->alloc, sizeof a->alloc, "%s", names[ak]);
	int nargs = clang_Cursor_getNumArguments(call);
	int need[] = { 1, 2, 2, 3 };
	if (nargs != need[ak]) {
		snprintf(a->nopatch, sizeof a->nopatch, "%s with %d arguments", names[ak], nargs);
		return;
	}
	if (ak == 1) {
		CXCursor n = clang_Cursor_getArgument(call, 0), m = clang_Cursor_getArgument(call, 1);
		if (!pure_expr(sc, n) || !pure_expr(sc, m)) {
			snprintf(a->nopatch, sizeof a->nopatch, "the size expression calls a function or has a side "
				 "effect: it cannot be evaluated again after the allocation");
			return;
		}
		if (cursor_text(sc, n, x, sizeof x) || cursor_text(sc, m, y, sizeof y)) {
			snprintf(a->nopatch, sizeof a->nopatch, "the size expression is too long to copy");
			return;
		}
		snprintf(a->size_expr, sizeof a->size_expr, "(size_t)(%s) * (%s)", x, y);
		uint64_t u = eval_u64(n), v = eval_u64(m);
		a->bytes = u && v && u <= UINT64_MAX / v ? u * v : 0;
	} else {
		CXCursor sz = clang_Cursor_getArgument(call, ak == 0 ? 0 : ak == 2 ? 1 : 2);
		if (!pure_expr(sc, sz)) {
			snprintf(a->nopatch, sizeof a->nopatch, "the size expression calls a function or has a side "
				 "effect: it cannot be evaluated again after the allocation");
			return;
		}
		if (cursor_text(sc, sz, x, sizeof x)) {
			snprintf(a->nopatch, sizeof a->nopatch, "the size expression is too long to copy");
			return;
		}
		snprintf(a->size_expr, sizeof a->size_expr, "(%s)", x);
		a->bytes = eval_u64(sz);
	}
	sf = stmt_frame(sc, k);
	if (sf < 0) {
		snprintf(a->nopatch, sizeof a->nopatch, "the allocation is not a statement of its own");
		return;
	}
	if (!rest_blank(sc, sc->st[sf].end)) {
		snprintf(a->nopatch, sizeof a->nopatch, "the allocation's line goes on after it");
		return;
	}
	off_of(clang_getRangeEnd(clang_getCursorExtent(sc->st[sf].c)), &a->insert_after);
	indent_at(sc, sc->st[sf].start, a->indent, sizeof a->indent);
}

static void on_vardecl(struct scan *sc, CXCursor c)
{
	CXType t = clang_getCanonicalType(clang_getCursorType(c));
	enum CX_StorageClass scl = clang_Cursor_getStorageClass(c);
	int file_scope = clang_getCursorKind(clang_getCursorSemanticParent(c)) == CXCursor_TranslationUnit;
	char fn[SRCADV_NAME_MAX] = "";
	struct srcadv_array *a;

	for (int k = sc->depth - 1; k >= 0; k--) {
		if (sc->st[k].ndirs)
			return; /* declared inside a parallel construct: private to it */
		if (sc->st[k].kind == CXCursor_FunctionDecl) {
			copy_cx(clang_getCursorSpelling(sc->st[k].c), fn, sizeof fn);
			break;
		}
	}
	if (file_scope) {
		/* tentative definitions count; extern declarations do not */
		if (t.kind != CXType_ConstantArray || scl == CX_SC_Extern || find_tracked(sc, c) >= 0)
			return;
		a = track(sc, c, scl == CX_SC_Static ? SRCADV_STATIC : SRCADV_GLOBAL, 1);
		if (!a)
			return;
		a->bytes = (uint64_t)(clang_Type_getSizeOf(t) > 0 ? clang_Type_getSizeOf(t) : 0);
		snprintf(a->size_expr, sizeof a->size_expr, "sizeof(%s)", a->name);
		a->insert_after = 0; /* at the start of main */
		return;
	}
	if (scl == CX_SC_Static && t.kind == CXType_ConstantArray && strcmp(fn, "main")) {
		a = track(sc, c, SRCADV_LOCAL_STATIC, 1);
		if (!a)
			return;
		snprintf(a->func, sizeof a->func, "%s", fn);
		a->bytes = (uint64_t)(clang_Type_getSizeOf(t) > 0 ? clang_Type_getSizeOf(t) : 0);
		snprintf(a->nopatch, sizeof a->nopatch, "a static inside %s(): apply the policy by hand at the start "
			 "of that function", fn);
		return;
	}
	if (!sc->in_main)
		return;
	if (t.kind == CXType_ConstantArray) {
		a = track(sc, c, scl == CX_SC_Static ? SRCADV_LOCAL_STATIC : SRCADV_MAIN_ARRAY, 1);
		if (!a)
			return;
		snprintf(a->func, sizeof a->func, "main");
		a->bytes = (uint64_t)(clang_Type_getSizeOf(t) > 0 ? clang_Type_getSizeOf(t) : 0);
		snprintf(a->size_expr, sizeof a->size_expr, "sizeof(%s)", a->name);
		/* the parent frame is the DeclStmt */
		int k = sc->depth - 1;
		if (k < 2 || sc->st[k - 1].kind != CXCursor_DeclStmt || sc->st[k - 2].kind != CXCursor_CompoundStmt) {
			snprintf(a->nopatch, sizeof a->nopatch, "the declaration is not a statement of its own");
		} else if (!rest_blank(sc, sc->st[k - 1].end)) {
			snprintf(a->nopatch, sizeof a->nopatch, "the declaration's line goes on after it");
		} else {
			off_of(clang_getRangeEnd(clang_getCursorExtent(sc->st[k - 1].c)), &a->insert_after);
			indent_at(sc, sc->st[k - 1].start, a->indent, sizeof a->indent);
		}
		return;
	}
	if (t.kind == CXType_Pointer && scl != CX_SC_Static) {
		a = track(sc, c, SRCADV_MAIN_HEAP, 0);
		if (!a)
			return;
		snprintf(a->func, sizeof a->func, "main");
		/* an initialiser from the malloc family (the last child: type references come first) */
		struct first_child f = { clang_getNullCursor(), 0 };
		clang_visitChildren(c, last_child_v, &f);
		if (f.found) {
			CXCursor call = strip(f.c);
			int ak = alloc_kind(call);
			if (ak >= 0 && ak != 3)
				record_alloc(sc, (int)sc->s->n - 1, call, ak, sc->depth - 1);
		}
	}
}

/* The innermost directives around the top of the walk. */
struct ctx {
	const struct dir *loop;     /* innermost worksharing loop */
	const struct dir *region;   /* innermost directive */
	int parallel, single;
	int loop_frame;
};

static void get_ctx(const struct scan *sc, struct ctx *x)
{
	memset(x, 0, sizeof *x);
	x->loop_frame = -1;
	for (int k = sc->depth - 1; k >= 0; k--)
		for (int d = 0; d < sc->st[k].ndirs; d++) {
			const struct dir *dr = &sc->dirs[sc->st[k].dirs[d]];
			if (!dr->parallel && !dr->loop && !dr->single)
				continue; /* critical, atomic, task...: not what the advice is about */
			if (!x->region)
				x->region = dr;
			if (dr->loop && !x->loop) {
				x->loop = dr;
				x->loop_frame = k;
			}
			x->parallel |= dr->parallel || dr->loop;
			x->single |= dr->single;
		}
}

struct idx_scan {
	const struct scan *sc;
	const char *loopvar;
	int indirect, uses_var;
};

static enum CXChildVisitResult idx_v(CXCursor c, CXCursor parent, CXClientData data)
{
	struct idx_scan *x = data;
	enum CXCursorKind k = clang_getCursorKind(c);

	if (k == CXCursor_ArraySubscriptExpr || k == CXCursor_CallExpr || k == CXCursor_MemberRefExpr) {
		x->indirect = 1;
		return CXChildVisit_Continue;
	}
	if (k == CXCursor_UnaryOperator) {
		CXSourceRange r = clang_getCursorExtent(c);
		unsigned t = tok_at(x->sc, off_of(clang_getRangeStart(r), NULL));
		if (tok_is(x->sc, t, "*")) {
			x->indirect = 1;
			return CXChildVisit_Continue;
		}
	}
	if (k == CXCursor_DeclRefExpr) {
		CXCursor d = clang_getCursorReferenced(c);
		CXType t = clang_getCanonicalType(clang_getCursorType(d));
		if (t.kind == CXType_Pointer || t.kind == CXType_ConstantArray)
			x->indirect = 1;
		else if (x->loopvar[0] && str_eq(clang_getCursorSpelling(c), x->loopvar))
			x->uses_var = 1;
	}
	return CXChildVisit_Recurse;
}

static enum CXChildVisitResult kids_v(CXCursor c, CXCursor parent, CXClientData data)
{
	CXCursor *k = data;
	if (clang_Cursor_isNull(k[0]))
		k[0] = c;
	else {
		k[1] = c;
		return CXChildVisit_Break;
	}
	return CXChildVisit_Continue;
}

static void index_shape(const struct scan *sc, CXCursor ase, const char *loopvar, int *indirect, int *uses)
{
	CXCursor k[2] = { clang_getNullCursor(), clang_getNullCursor() };
	struct idx_scan x = { sc, loopvar, 0, 0 };

	clang_visitChildren(ase, kids_v, k);
	if (!clang_Cursor_isNull(k[1])) {
		if (idx_v(k[1], ase, &x) == CXChildVisit_Recurse)
			clang_visitChildren(k[1], idx_v, &x);
		/* i % M wraps around: every thread touches the whole array */
		CXSourceRange r = clang_getCursorExtent(k[1]);
		unsigned a = tok_at(sc, off_of(clang_getRangeStart(r), NULL)), b = off_of(clang_getRangeEnd(r), NULL);
		for (; a < sc->ntoks && sc->toks[a].off < b; a++)
			if (!strcmp(sc->toks[a].text, "%"))
				x.uses_var = 0;
	}
	*indirect = x.indirect;
	*uses = x.uses_var;
}

static void on_use(struct scan *sc, CXCursor c, int idx)
{
	struct srcadv_array *a = &sc->s->arr[idx];
	unsigned line;
	int k = sc->depth - 1; /* the DeclRefExpr's frame */
	int mode = SRCADV_R, shape = SRCADV_WHOLE;
	struct ctx cx;

	off_of(clang_getCursorLocation(c), &line);
	/* inside sizeof/_Alignof nothing is accessed */
	for (int f = sc->depth - 1; f >= 0 && clang_isExpression(sc->st[f].kind); f--)
		if (sc->st[f].kind == CXCursor_UnaryExpr)
			return;
	/* up through casts and parentheses */
	while (k > 0 && (sc->st[k - 1].kind == CXCursor_UnexposedExpr || sc->st[k - 1].kind == CXCursor_ParenExpr))
		k--;
	int nsub = 0, outer = k;
	int first_indirect = 0, first_uses = 0, inner_uses = 0;
	get_ctx(sc, &cx);
	const char *loopvar = cx.loop ? cx.loop->loopvar : "";
	/* up the subscripts: a[i][j] is ASE(cast(ASE(cast(a), i)), j), each level starting where a does */
	for (int cur = k;;) {
		int ind, uses;
		if (cur < 1 || sc->st[cur - 1].kind != CXCursor_ArraySubscriptExpr ||
		    sc->st[cur - 1].start != sc->st[cur].start)
			break;
		outer = --cur;
		index_shape(sc, sc->st[outer].c, loopvar, &ind, &uses);
		if (nsub == 0) {
			first_indirect = ind;
			first_uses = uses;
		} else {
			first_indirect |= ind;
			inner_uses |= uses;
		}
		nsub++;
		while (cur > 0 && (sc->st[cur - 1].kind == CXCursor_ParenExpr ||
				   (sc->st[cur - 1].kind == CXCursor_UnexposedExpr &&
				    sc->st[cur - 1].start == sc->st[cur].start)))
			cur--;
	}
	while (outer > 0 && sc->st[outer - 1].kind == CXCursor_ParenExpr)
		outer--;
	if (nsub) {
		shape = first_indirect ? SRCADV_IRREGULAR : first_uses ? SRCADV_REGULAR
							      : inner_uses ? SRCADV_COLUMNS : SRCADV_SHARED;
		if (!cx.loop && shape != SRCADV_IRREGULAR)
			shape = SRCADV_SHARED;
		/* the mode from the parent of the whole subscript */
		if (outer > 0) {
			const struct frame *p = &sc->st[outer - 1];
			if ((p->kind == CXCursor_BinaryOperator || p->kind == CXCursor_CompoundAssignOperator) &&
			    p->start == sc->st[outer].start) {
				unsigned t = tok_at(sc, sc->st[outer].end);
				if (p->kind == CXCursor_CompoundAssignOperator)
					mode = SRCADV_RW;
				else if (tok_is(sc, t, "="))
					mode = SRCADV_W;
			} else if (p->kind == CXCursor_UnaryOperator) {
				unsigned t = tok_at(sc, p->start), te = tok_at(sc, p->end);
				if (tok_is(sc, t, "++") || tok_is(sc, t, "--") || tok_is(sc, t, "&") ||
				    (te > 0 && (tok_is(sc, te - 1, "++") || tok_is(sc, te - 1, "--"))))
					mode = SRCADV_RW;
			}
		}
	} else {
		/* not subscripted: the pointer itself, or the whole array */
		if (k > 0) {
			const struct frame *p = &sc->st[k - 1];
			if ((p->kind == CXCursor_BinaryOperator) && p->start == sc->st[k].start &&
			    tok_is(sc, tok_at(sc, sc->st[k].end), "="))
				return; /* the pointer is assigned */
			if (p->kind == CXCursor_CallExpr) {
				if (str_eq(clang_getCursorSpelling(p->c), "free"))
					return;
				if (!cx.parallel && (str_eq(clang_getCursorSpelling(p->c), "memset") ||
						     str_eq(clang_getCursorSpelling(p->c), "memcpy")) &&
				    p->start < sc->st[k].start) {
					CXCursor a0 = strip(clang_Cursor_getArgument(p->c, 0));
					if (clang_equalCursors(a0, c) || line_of(a0) == line) {
						if (srcadv_add_init(a, line))
							sc->oom = 1;
						return;
					}
				}
			}
			if (p->kind == CXCursor_UnaryOperator && tok_is(sc, tok_at(sc, p->start), "&"))
				return; /* &p: posix_memalign's argument, handled there */
		}
		if (!cx.parallel)
			return;
	}
	if (!cx.parallel) {
		if (mode & SRCADV_W)
			if (srcadv_add_init(a, line))
				sc->oom = 1;
		return;
	}
	struct srcadv_access *x = srcadv_add_access(a);
	if (!x) {
		sc->oom = 1;
		return;
	}
	x->line = line;
	x->mode = mode;
	x->shape = shape;
	x->single = cx.single;
	x->in_loop = cx.loop != NULL;
	x->pragma_line = cx.loop ? cx.loop->line : cx.region->line;
	x->sched = cx.loop ? cx.loop->sched : 0;
	snprintf(x->chunk, sizeof x->chunk, "%s", cx.loop ? cx.loop->chunk : "");
	/* data-sharing: the innermost directive that names it */
	char key[SRCADV_NAME_MAX + 2];
	snprintf(key, sizeof key, "|%s|", a->name);
	x->sharing = SRCADV_SHARED_DEFAULT;
	for (int f = sc->depth - 1; f >= 0 && x->sharing == SRCADV_SHARED_DEFAULT; f--)
		for (int d = 0; d < sc->st[f].ndirs && x->sharing == SRCADV_SHARED_DEFAULT; d++)
			for (int s = SRCADV_SHARED_CLAUSE; s <= SRCADV_REDUCTION; s++)
				if (strstr(sc->dirs[sc->st[f].dirs[d]].names[s], key))
					x->sharing = s;
}

/* The loop variable of a for statement: its init's declared or assigned variable. */
static void loop_var(CXCursor forstmt, char *buf, size_t cap)
{
	struct first_child f = { clang_getNullCursor(), 0 };
	buf[0] = '\0';
	clang_visitChildren(forstmt, first_child_v, &f);
	if (!f.found)
		return;
	CXCursor init = f.c;
	enum CXCursorKind k = clang_getCursorKind(init);
	if (k == CXCursor_DeclStmt || k == CXCursor_BinaryOperator) {
		struct first_child g = { clang_getNullCursor(), 0 };
		clang_visitChildren(init, first_child_v, &g);
		if (g.found)
			copy_cx(clang_getCursorSpelling(strip(g.c)), buf, cap);
	}
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data)
{
	struct scan *sc = data;
	enum CXCursorKind kind = clang_getCursorKind(c);
	CXSourceRange r = clang_getCursorExtent(c);
	CXFile f = NULL;
	unsigned start = 0, end = 0;

	clang_getExpansionLocation(clang_getRangeStart(r), &f, NULL, NULL, &start);
	if (!clang_File_isEqual(f, sc->file))
		return CXChildVisit_Continue;
	end = off_of(clang_getRangeEnd(r), NULL);
	if (sc->depth >= MAX_DEPTH || sc->oom)
		return CXChildVisit_Continue;
	struct frame *fr = &sc->st[sc->depth++];
	fr->c = c;
	fr->kind = kind;
	fr->start = start;
	fr->end = end;
	fr->ndirs = 0;
	if (sc->depth == 1 && !sc->first_decl_line)
		off_of(clang_getRangeStart(r), &sc->first_decl_line);
	/* bind the directives whose statement starts here */
	if (clang_isStatement(kind) || clang_isExpression(kind)) {
		for (size_t i = 0; i < sc->ndirs && fr->ndirs < 3; i++) {
			struct dir *d = &sc->dirs[i];
			if (d->has_stmt && d->stmt_off == start) {
				d->has_stmt = 0;
				fr->dirs[fr->ndirs++] = (int)i;
				if (d->loop && kind == CXCursor_ForStmt)
					loop_var(c, d->loopvar, sizeof d->loopvar);
				sc->s->directives++;
			}
		}
	}
	int main_here = 0;
	if (kind == CXCursor_FunctionDecl && clang_isCursorDefinition(c) &&
	    str_eq(clang_getCursorSpelling(c), "main")) {
		main_here = 1;
		sc->in_main = sc->depth;
	}
	if (main_here || (sc->in_main && sc->depth == sc->in_main + 1 && kind == CXCursor_CompoundStmt)) {
		if (kind == CXCursor_CompoundStmt && !sc->s->has_main && rest_blank(sc, start + 1)) {
			sc->s->has_main = 1;
			off_of(clang_getRangeStart(r), &sc->s->main_body_line);
			snprintf(sc->s->main_indent, sizeof sc->s->main_indent, "\t");
		}
	}
	if (kind == CXCursor_VarDecl)
		on_vardecl(sc, c);
	else if (kind == CXCursor_DeclRefExpr) {
		int idx = find_tracked(sc, clang_getCursorReferenced(c));
		if (idx >= 0)
			on_use(sc, c, idx);
	} else if (kind == CXCursor_BinaryOperator && sc->in_main) {
		/* p = malloc(...) in main */
		CXCursor k2[2] = { clang_getNullCursor(), clang_getNullCursor() };
		clang_visitChildren(c, kids_v, k2);
		CXCursor lhs = strip(k2[0]);
		if (clang_getCursorKind(lhs) == CXCursor_DeclRefExpr && tok_is(sc, tok_at(sc, off_of(
			clang_getRangeEnd(clang_getCursorExtent(k2[0])), NULL)), "=")) {
			int idx = find_tracked(sc, clang_getCursorReferenced(lhs));
			CXCursor call = strip(k2[1]);
			int ak = alloc_kind(call);
			struct ctx cx;
			get_ctx(sc, &cx);
			if (idx >= 0 && ak >= 0 && ak != 3 && !cx.parallel)
				record_alloc(sc, idx, call, ak, sc->depth - 1);
		}
	} else if (kind == CXCursor_CallExpr && sc->in_main && alloc_kind(c) == 3 &&
		   clang_Cursor_getNumArguments(c) == 3) {
		/* posix_memalign(&p, align, size) in main */
		CXCursor a0 = strip(clang_Cursor_getArgument(c, 0));
		if (clang_getCursorKind(a0) == CXCursor_UnaryOperator) {
			struct first_child g = { clang_getNullCursor(), 0 };
			clang_visitChildren(a0, first_child_v, &g);
			CXCursor ref = g.found ? strip(g.c) : g.c;
			int idx = g.found && clang_getCursorKind(ref) == CXCursor_DeclRefExpr ?
					  find_tracked(sc, clang_getCursorReferenced(ref)) : -1;
			if (idx >= 0)
				record_alloc(sc, idx, c, 3, sc->depth - 1);
		}
	}
	if (kind == CXCursor_CompoundStmt && sc->in_main && sc->depth == sc->in_main + 1 && !sc->s->main_indent[1]) {
		/* the indentation of main's first statement */
		struct first_child g = { clang_getNullCursor(), 0 };
		clang_visitChildren(c, first_child_v, &g);
		if (g.found)
			indent_at(sc, off_of(clang_getRangeStart(clang_getCursorExtent(g.c)), NULL), sc->s->main_indent,
				  sizeof sc->s->main_indent);
	}
	clang_visitChildren(c, visit, sc);
	if (main_here)
		sc->in_main = 0;
	sc->depth--;
	return CXChildVisit_Continue;
}

/* The end of the file's leading preprocessor block: after the last #include (or the #endif closing it). */
static unsigned include_after(const struct scan *sc)
{
	unsigned line = 1, best = 0;
	int depth = 0;
	const char *p = sc->src, *e = sc->src + sc->len;

	while (p < e && (!sc->first_decl_line || line < sc->first_decl_line)) {
		const char *q = p;
		while (q < e && (*q == ' ' || *q == '\t'))
			q++;
		if (q < e && *q == '#') {
			q++;
			while (q < e && (*q == ' ' || *q == '\t'))
				q++;
			if (!strncmp(q, "if", 2))
				depth++;
			else if (!strncmp(q, "endif", 5)) {
				if (--depth == 0 && best)
					best = line;
			} else if (!strncmp(q, "include", 7) && depth == 0)
				best = line;
		}
		while (p < e && *p != '\n')
			p++;
		p++;
		line++;
	}
	return best;
}

static void first_error(CXTranslationUnit tu, char *msg, size_t cap)
{
	for (unsigned i = 0, n = clang_getNumDiagnostics(tu); i < n; i++) {
		CXDiagnostic d = clang_getDiagnostic(tu, i);
		if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
			CXString s = clang_formatDiagnostic(d, CXDiagnostic_DisplaySourceLocation |
							    CXDiagnostic_DisplayColumn);
			snprintf(msg, cap, "%s", clang_getCString(s));
			clang_disposeString(s);
			clang_disposeDiagnostic(d);
			return;
		}
		clang_disposeDiagnostic(d);
	}
}

int srcadv_scan_file(const char *path, const char *src, size_t len, const char *const *args, int nargs,
		     struct srcadv_scan *s, char *msg, size_t msgcap)
{
	CXIndex index = clang_createIndex(0, 0);
	CXTranslationUnit tu = NULL, tu2 = NULL;
	const char **argv = calloc((size_t)nargs + 2, sizeof *argv);
	struct scan *sc = calloc(1, sizeof *sc);
	CXToken *toks = NULL;
	unsigned ntoks = 0;
	int rc = SRCADV_ENOMEM;

	msg[0] = '\0';
	if (!index || !argv || !sc)
		goto out;
	/* 1: with OpenMP: is it a valid program? */
	argv[0] = "-fopenmp";
	for (int i = 0; i < nargs; i++)
		argv[i + 1] = args[i];
	enum CXErrorCode e = clang_parseTranslationUnit2(index, path, argv, nargs + 1, NULL, 0,
							 CXTranslationUnit_KeepGoing, &tu);
	if (e != CXError_Success || !tu) {
		snprintf(msg, msgcap, "libclang cannot parse it (error %d)", (int)e);
		rc = SRCADV_EPARSE;
		goto out;
	}
	first_error(tu, msg, msgcap);
	if (msg[0]) {
		rc = SRCADV_EPARSE;
		goto out;
	}
	/* 2: without OpenMP (as the same program: _OPENMP defined), the statements the scan walks */
	argv[0] = "-D_OPENMP=201511";
	e = clang_parseTranslationUnit2(index, path, argv, nargs + 1, NULL, 0, CXTranslationUnit_KeepGoing, &tu2);
	if (e != CXError_Success || !tu2) {
		snprintf(msg, msgcap, "libclang cannot parse it (error %d)", (int)e);
		rc = SRCADV_EPARSE;
		goto out;
	}
	first_error(tu2, msg, msgcap);
	if (msg[0]) {
		rc = SRCADV_EPARSE;
		goto out;
	}
	sc->tu = tu2;
	sc->file = clang_getFile(tu2, path);
	sc->src = src;
	sc->len = len;
	sc->s = s;
	if (!sc->file) {
		snprintf(msg, msgcap, "libclang lost the file");
		rc = SRCADV_EPARSE;
		goto out;
	}
	CXSourceRange whole = clang_getRange(clang_getLocationForOffset(tu2, sc->file, 0),
					     clang_getLocationForOffset(tu2, sc->file, (unsigned)len));
	clang_tokenize(tu2, whole, &toks, &ntoks);
	sc->toks = calloc(ntoks ? ntoks : 1, sizeof *sc->toks);
	if (!sc->toks)
		goto out;
	for (unsigned i = 0; i < ntoks; i++) {
		CXSourceRange tr = clang_getTokenExtent(tu2, toks[i]);
		CXString sp = clang_getTokenSpelling(tu2, toks[i]);
		sc->toks[i].kind = clang_getTokenKind(toks[i]);
		clang_getSpellingLocation(clang_getRangeStart(tr), NULL, &sc->toks[i].line, NULL, &sc->toks[i].off);
		clang_getSpellingLocation(clang_getRangeEnd(tr), NULL, NULL, NULL, &sc->toks[i].end);
		sc->toks[i].text = strdup(clang_getCString(sp) ? clang_getCString(sp) : "");
		clang_disposeString(sp);
		sc->ntoks = i + 1;
		if (!sc->toks[i].text)
			goto out;
	}
	if (find_dirs(sc))
		goto out;
	clang_visitChildren(clang_getTranslationUnitCursor(tu2), visit, sc);
	if (sc->oom)
		goto out;
	s->include_after = include_after(sc);
	/* pointers never given memory from the malloc family are not arrays */
	size_t w = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!sc->tr[i].confirmed) {
			free(s->arr[i].acc);
			free(s->arr[i].init);
			continue;
		}
		s->arr[w++] = s->arr[i];
	}
	s->n = w;
	rc = 0;
out:
	if (toks)
		clang_disposeTokens(tu2, toks, ntoks);
	if (sc) {
		for (unsigned i = 0; i < sc->ntoks; i++)
			free(sc->toks[i].text);
		free(sc->toks);
		free(sc->dirs);
		for (size_t i = 0; i < sc->ntr; i++)
			free(sc->tr[i].usr);
		free(sc->tr);
	}
	free(sc);
	free(argv);
	if (tu2)
		clang_disposeTranslationUnit(tu2);
	if (tu)
		clang_disposeTranslationUnit(tu);
	if (index)
		clang_disposeIndex(index);
	return rc;
}

#endif /* NK_HAVE_LIBCLANG */
