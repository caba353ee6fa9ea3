/* SPDX-License-Identifier: BSD-3-Clause
 * Fuzz the symboliser's /proc/PID/maps parser (nk__sym_open): the maps texts
 * come from a profile file, i.e. user input.  The input is split at NUL bytes
 * into up to 8 texts (a process's maps read several times; later ones win).
 * Besides "never crash", it checks that a failed open leaves its output alone
 * with a message naming the line, and that every mapping found by an address
 * holds that address; then it symbolises a few addresses of each line (the
 * names of real files in the seeds make it open ELF objects too).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void probe(nk__symtab *s, uint64_t addr)
{
	const char *name = (const char *)1;
	uint64_t lo = 1, hi = 0;
	struct nk__sym_loc loc;
	struct nk__sym_var var;
	int kind = nk__sym_mapping(s, addr, &name, &lo, &hi);

	if (kind < NK__MAP_NONE || kind > NK__MAP_OTHER)
		abort();
	if (kind == NK__MAP_NONE ? (name || lo || hi) : (!name || !*name || lo > addr || addr >= hi))
		abort();
	if (nk__sym_ip(s, addr, &loc)) {
		if (kind != NK__MAP_FILE || !loc.object || (loc.function && !*loc.function) || loc.line < 0)
			abort();
	} else if (loc.object || loc.function || loc.file) {
		abort();
	}
	if (nk__sym_data(s, addr, &var)) {
		if (!var.name || !var.object || addr < var.addr || (var.size && addr - var.addr >= var.size))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	const char *texts[8];
	size_t n = 0;
	nk__symtab *s = (nk__symtab *)&s;
	nk_error err;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	for (char *p = buf; n < 8 && p <= buf + size; p += strlen(p) + 1)
		texts[n++] = p;
	int rc = nk__sym_open(texts, n, &s, &err);
	if (rc) {
		if (rc != NK_EPARSE && rc != NK_ENOMEM)
			abort();
		if (s != (nk__symtab *)&s || err.code != rc || !err.message[0] ||
		    strlen(err.message) >= sizeof err.message || (rc == NK_EPARSE && !strstr(err.message, "line ")))
			abort();
		free(buf);
		return 0;
	}
	const char *w = nk__sym_warnings(s);
	if (!w || (*w && w[strlen(w) - 1] != '\n'))
		abort();
	for (size_t i = 0; i < n; i++)
		for (const char *p = texts[i]; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
			uint64_t a = strtoull(p, NULL, 16);
			probe(s, a);
			probe(s, a + 0x123);
			probe(s, a - 1);
		}
	probe(s, 0);
	probe(s, UINT64_MAX);
	nk__sym_close(s);
	free(buf);
	return 0;
}
