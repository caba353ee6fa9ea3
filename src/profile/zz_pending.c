/*
 * TEMPORARY placeholders for the nkp reader (src/profile/nkp_read.c) and the
 * symboliser (src/profile/symbols.c), written by others in parallel.  Drop
 * this file when merging them.
 */
#include <stddef.h>

#include "util/list.h"
#include "profile/nkp.h"
#include "profile/symbols.h"

int nk__nkp_parse(const void *data, size_t len, struct nk__nkp_profile **out, nk_error *err)
{
	(void)data;
	(void)len;
	(void)out;
	return nk__error(err, NK_ENOSYS, "profile reader not built yet");
}

int nk__nkp_load(const char *path, struct nk__nkp_profile **out, nk_error *err)
{
	(void)path;
	(void)out;
	return nk__error(err, NK_ENOSYS, "profile reader not built yet");
}

void nk__nkp_free(struct nk__nkp_profile *p)
{
	(void)p;
}

int nk__sym_open(const char *const *maps_texts, size_t n, nk__symtab **out, nk_error *err)
{
	(void)maps_texts;
	(void)n;
	(void)out;
	return nk__error(err, NK_ENOSYS, "symboliser not built yet");
}

void nk__sym_close(nk__symtab *s)
{
	(void)s;
}

const char *nk__sym_warnings(const nk__symtab *s)
{
	(void)s;
	return "";
}

int nk__sym_ip(nk__symtab *s, uint64_t ip, struct nk__sym_loc *out)
{
	(void)s;
	(void)ip;
	(void)out;
	return 0;
}

int nk__sym_data(nk__symtab *s, uint64_t addr, struct nk__sym_var *out)
{
	(void)s;
	(void)addr;
	(void)out;
	return 0;
}

int nk__sym_mapping(nk__symtab *s, uint64_t addr, const char **name, uint64_t *lo, uint64_t *hi)
{
	(void)s;
	(void)addr;
	(void)name;
	(void)lo;
	(void)hi;
	return 0;
}
