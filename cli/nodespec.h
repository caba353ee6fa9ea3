/* SPDX-License-Identifier: BSD-3-Clause
 * numactl's node and cpu specs (numactl(8)), for numakit run's numactl
 * options: pure text handling against an allowed set handed in, no machine
 * and no system call, so that tests/unit/test_nodespec.c and
 * fuzz/fuzz_nodespec.c reach every case.
 */
#ifndef NK_CLI_NODESPEC_H
#define NK_CLI_NODESPEC_H

#include <stddef.h>

/**
 * Whether @p text uses numactl's own forms, which mean something only
 * against this process's allowed set: "all", a leading "+" (relative) or
 * "!" (inverse); and its device forms ("netdev:eth0"), which
 * cli_spec_parse() refuses by name.  A plain list ("0-2,5") is not: numakit takes it as every
 * list option does, each id checked against the machine by the library.
 */
int cli_spec_is_numactl(const char *text);

/**
 * numactl's "same": the node spec given before.  @p *last is the last node
 * spec of the command line (NULL: none yet).  Returns @p text, and records
 * it in @p *last, unless it is "same"; for "same", *last, or NULL when no
 * node spec came before.
 */
const char *cli_spec_same(const char *text, const char **last);

/**
 * Parse @p text in numactl's grammar
 *     [!][+] ( all | ITEM[,ITEM...] ),   ITEM = N or N-M (decimal)
 * against @p allowed, @p n ids in increasing order (the nodes or cpus this
 * process may use): "all" is the allowed set; with "+" each N counts
 * positions in it (+0 the first allowed id); "!" takes the allowed ids the
 * list does not name.  Every id named (a range's ends) must be allowed; a
 * range takes the allowed ids between its ends (numactl skips the others).
 * Numactl's device forms (netdev:, file:, ip:, block:, pci:) are refused.
 * @p what names the ids in messages ("node", "cpu").
 * Writes the result, increasing, into @p out (room for @p n ids) and returns
 * its count, 0 included; -1 with a one-line reason in @p why on error.
 */
int cli_spec_parse(const char *text, const char *what, const int *allowed, size_t n, int *out, char *why,
		   size_t whycap);

#endif
