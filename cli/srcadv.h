/* SPDX-License-Identifier: BSD-3-Clause
 * numakit advise --source: the source advisor (issue 7, section 5;
 * docs/source-advisor.md).
 *
 * Two halves with one fact structure between them:
 *  - cli/srcscan.c reads a C file with libclang and fills struct srcadv_scan
 *    (the arrays, their accesses in OpenMP loops, where code may be inserted);
 *  - cli/srcadv.c (this header) is pure: it decides a policy per array
 *    (srcadv_decide), writes the unified diff that inserts the numakit calls
 *    (srcadv_patch) and prints the facts as text or JSON.  It needs neither
 *    libclang nor the machine, so tests/unit/test_srcadv.c tests it on
 *    hand-written facts.
 * libclang stays in the command: libnumakit never links it.
 */
#ifndef NK_CLI_SRCADV_H
#define NK_CLI_SRCADV_H

#include <stddef.h>
#include <stdint.h>

#define SRCADV_NAME_MAX 64
#define SRCADV_EXPR_MAX 256
#define SRCADV_REASON_MAX 1024

/** How an access uses the element: read, written, or both (compound assignment, ++/--, address taken). */
enum srcadv_mode { SRCADV_R = 1, SRCADV_W = 2, SRCADV_RW = 3 };

/** The shape of the (first) subscript of an access in a parallel loop. */
enum srcadv_shape {
	SRCADV_REGULAR = 0,   /* the parallel loop's variable, directly or with a constant offset/scale */
	SRCADV_IRREGULAR = 1, /* through another array or a pointer: a gather/scatter */
	SRCADV_SHARED = 2,    /* does not follow the loop variable: any thread may touch any element */
	SRCADV_COLUMNS = 3,   /* the loop variable indexes an inner dimension only (a column partition) */
	SRCADV_WHOLE = 4,     /* not subscripted: the array is passed or used as a whole */
};

/** The loop's schedule clause. */
enum srcadv_sched {
	SRCADV_SCHED_NONE = 0, /* no schedule clause (GCC and LLVM then use static) */
	SRCADV_SCHED_STATIC,
	SRCADV_SCHED_DYNAMIC,
	SRCADV_SCHED_GUIDED,
	SRCADV_SCHED_AUTO,
	SRCADV_SCHED_RUNTIME,
};

/** The variable's data-sharing in the region, from the clauses (default: shared). */
enum srcadv_sharing {
	SRCADV_SHARED_DEFAULT = 0, /* no clause names it: shared */
	SRCADV_SHARED_CLAUSE,      /* shared(...) */
	SRCADV_PRIVATE,
	SRCADV_FIRSTPRIVATE,
	SRCADV_LASTPRIVATE,
	SRCADV_REDUCTION,
};

/** Where an array lives. */
enum srcadv_kind {
	SRCADV_GLOBAL = 0,  /* file-scope array with external linkage */
	SRCADV_STATIC,      /* file-scope static array */
	SRCADV_LOCAL_STATIC,/* static array inside a function */
	SRCADV_MAIN_ARRAY,  /* fixed-size array declared in main */
	SRCADV_MAIN_HEAP,   /* pointer in main assigned from malloc/calloc/aligned_alloc/posix_memalign */
};

/** What to do with an array. */
enum srcadv_action {
	SRCADV_LEAVE = 0, /* no numakit call */
	SRCADV_PLACE,     /* apply `policy` (a numakit policy text) */
};

/** One access to an array inside an OpenMP parallel construct. */
struct srcadv_access {
	unsigned line;
	int mode;                /* enum srcadv_mode */
	unsigned pragma_line;    /* line of the worksharing (or parallel) directive */
	int in_loop;             /* inside a worksharing loop (for / parallel for); 0: a parallel region only */
	int single;              /* inside single or master: one thread */
	int sched;               /* enum srcadv_sched */
	char chunk[32];          /* the chunk expression, "" when none */
	int sharing;             /* enum srcadv_sharing */
	int shape;               /* enum srcadv_shape */
};

/** An array, its accesses and the decision. */
struct srcadv_array {
	char name[SRCADV_NAME_MAX];
	char type[SRCADV_EXPR_MAX];  /* C type as written by clang, e.g. "double[1048576]", "double *" */
	char func[SRCADV_NAME_MAX];  /* function of a local, "" at file scope */
	int kind;                    /* enum srcadv_kind */
	unsigned decl_line;
	char alloc[16];              /* malloc, calloc, aligned_alloc, posix_memalign; "" for arrays */
	uint64_t bytes;              /* size, 0 when not a constant */
	struct srcadv_access *acc;
	size_t nacc, capacc;
	unsigned *init;              /* lines of writes outside any parallel region (serial initialisation) */
	size_t ninit, capinit;
	/* where the placement goes (filled by the scan) */
	unsigned insert_after;       /* line after which to insert; 0: at the start of main (file-scope arrays) */
	char indent[32];             /* indentation of that line */
	char size_expr[1024];        /* C expression of the byte size, "" when it cannot be patched */
	char nopatch[256];           /* why no call can be inserted, "" when it can */
	/* the decision (srcadv_decide) */
	int action;                  /* enum srcadv_action */
	char policy[32];
	char reason[SRCADV_REASON_MAX];
};

/** Everything the scan found in one file. */
struct srcadv_scan {
	char file[1024];             /* the path as given (the diff's a/ and b/ name) */
	struct srcadv_array *arr;
	size_t n, cap;
	int has_main;
	unsigned main_body_line;     /* line of main's '{' (the setup goes after it) */
	char main_indent[32];        /* indentation of main's first statement */
	unsigned include_after;      /* last line of the file's leading #include block, 0 when none */
	unsigned directives;         /* OpenMP directives seen */
};

/* ---- building the facts (the scan, and tests) ---- */

/** Add an array (zeroed but for the name); NULL on ENOMEM. */
struct srcadv_array *srcadv_add_array(struct srcadv_scan *s, const char *name);
/** Add an access; NULL on ENOMEM. */
struct srcadv_access *srcadv_add_access(struct srcadv_array *a);
/** Record a serial write at @p line (once per line); -1 on ENOMEM. */
int srcadv_add_init(struct srcadv_array *a, unsigned line);
/** Free what the scan holds (not @p s itself); the scan is then empty. */
void srcadv_scan_clear(struct srcadv_scan *s);

/* ---- the scan (cli/srcscan.c, libclang) ---- */

/** srcadv_scan_file() results besides 0. */
#define SRCADV_ENOLIBCLANG (-2) /* numakit was built without libclang */
#define SRCADV_EPARSE (-3)      /* the file does not parse (message in msg) */
#define SRCADV_ENOMEM (-4)

/** Is the scanner there (numakit built with libclang)? */
int srcadv_have_libclang(void);

/**
 * Scan @p path (its text is @p src, @p len bytes, for offsets and indentation):
 * parse it with libclang (with -fopenmp, then without it for the loop bodies,
 * which clang 14's C API hides inside OpenMP directives) with the extra
 * arguments @p args, and fill @p s (zeroed by the caller; s->file set).
 * Returns 0, SRCADV_ENOLIBCLANG, SRCADV_EPARSE (the first error in @p msg) or
 * SRCADV_ENOMEM.
 */
int srcadv_scan_file(const char *path, const char *src, size_t len, const char *const *args, int nargs,
		     struct srcadv_scan *s, char *msg, size_t msgcap);

/* ---- deciding ---- */

/**
 * Decide each array's action, policy and reason (docs/source-advisor.md, "Rules"):
 * arrays smaller than @p min_size bytes or private in every parallel access are
 * left; regular accesses under a static schedule get block; irregular,
 * dynamic/guided/auto/runtime, chunked static or shared read accesses get
 * cyclic; arrays used by one thread are left.
 */
void srcadv_decide(struct srcadv_scan *s, uint64_t min_size);

/* ---- the patch ---- */

/**
 * The unified diff (a/FILE, b/FILE) that adds the numakit calls the decisions
 * ask for to @p src (the file's text, @p len bytes): the includes and helper
 * functions after the file's #include block, the machine setup at the start of
 * main, and one nk_src_place() per placed array (file-scope arrays after the
 * setup, main's arrays after their declaration or allocation statement).  An
 * empty string when nothing is to be placed (or no main).  Returns 0 and a
 * malloc'ed text in *out, -1 on ENOMEM.
 */
int srcadv_patch(const struct srcadv_scan *s, const char *src, size_t len, char **out);

/* ---- printing ---- */

/** Names used in the output. */
const char *srcadv_mode_name(int mode);
const char *srcadv_shape_name(int shape);
const char *srcadv_sched_name(int sched);
const char *srcadv_sharing_name(int sharing);
const char *srcadv_kind_name(int kind);

/** The scan table and the reasons, as text; malloc'ed, NULL on ENOMEM. */
char *srcadv_format_text(const struct srcadv_scan *s);

/**
 * The JSON document "numakit-source-advice" version 1 (schema in
 * docs/source-advisor.md), with @p patch (may be NULL) as "patch"; malloc'ed,
 * NULL on ENOMEM.
 */
char *srcadv_format_json(const struct srcadv_scan *s, const char *patch);

#endif /* NK_CLI_SRCADV_H */
