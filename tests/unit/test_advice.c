/* SPDX-License-Identifier: BSD-3-Clause
 * Advice files (src/advise/advice*.c, docs/plan.md): the JSON form round
 * trips, every rejection of the reader with its message (entry index, key
 * and field), the check against synthetic machines, nk_advice_set on a
 * profile built in memory, and the file loader.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "advise/advice.h"
#include "job/share.h"
#include "profile/analysis.h"

/* A plan using every member of the schema. */
static const char full_plan[] =
	"{\n"
	"  \"format\": \"numakit-plan\",\n"
	"  \"version\": 1,\n"
	"  \"program\": \"./stencil\",\n"
	"  \"profile\": \"run.nkp\",\n"
	"  \"machine\": {\"nodes\": [0, 1, 2, 3], \"numa_factor\": 2.1},\n"
	"  \"pin\": {\"strategy\": \"sharing\", \"threads\": 2, \"sharing\": [[0, 12.5], [12.5, 0]],\n"
	"          \"reason\": \"threads 0 and 1 share\"},\n"
	"  \"entries\": [\n"
	"    {\"variable\": \"grid (stencil.c:12)\", \"key\": \"static:stencil:grid\", \"policy\": \"block:threads=1,0\",\n"
	"     \"when\": \"alloc\", \"reason\": \"partitioned\",\n"
	"     \"evidence\": {\"size\": 1048576, \"samples\": 900, \"threads\": 8, \"remote_fraction\": 0.5,\n"
	"                  \"read_fraction\": 0.75, \"regularity\": 0.95, \"shared_pages\": 0.01,\n"
	"                  \"dominant_node\": 0, \"dominant_share\": 0.9, \"diagnosis\": \"hot-spot\", \"noise_ms\": 0.002,\n"
	"                  \"candidates\": [{\"policy\": \"none\", \"remote_fraction\": 0.5, \"stall_ms\": 0.12},\n"
	"                                 {\"policy\": \"block:threads=1,0\", \"remote_fraction\": 0.0, \"stall_ms\": 0.08},\n"
	"                                 {\"policy\": \"cyclic\", \"remote_fraction\": null, \"stall_ms\": 0.1}]}},\n"
	"    {\"key\": \"heap:stencil+0x1234;libc.so.6+0x29d90\", \"policy\": \"pages\", \"page_size\": 4096,\n"
	"     \"pages\": [[0, 10, 1], [10, 6, 0], [20, 1, 3]]},\n"
	"    {\"key\": \"name:table\", \"policy\": \"cyclic:nodes=0-3\", \"when\": \"phase\", \"phase\": \"solve\",\n"
	"     \"evidence\": {\"size\": 8192, \"read_fraction\": null, \"regularity\": null, \"dominant_node\": null}},\n"
	"    {\"key\": \"name:table\", \"policy\": \"none\", \"when\": \"first-parallel\"}\n"
	"  ],\n"
	"  \"left_alone\": [{\"key\": \"heap:pid12:site3\", \"variable\": \"allocation site 3\", \"reason\": \"process-local\"},\n"
	"                 {\"key\": \"name:list\", \"reason\": \"no placement is predicted better\",\n"
	"                  \"candidates\": [{\"policy\": \"none\", \"remote_fraction\": 0.3, \"stall_ms\": 1},\n"
	"                                 {\"policy\": \"cyclic\", \"remote_fraction\": 0.75, \"stall_ms\": 2}]}],\n"
	"  \"warnings\": [\"migrating table costs more than it saves\"]\n"
	"}\n";

static nk_advice *parse_ok(const char *text)
{
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	int rc = nk_advice_parse(text, strlen(text), &a, &err);
	if (rc)
		fail_msg("parse failed (%d): %s", rc, err.message);
	return a;
}

static void test_roundtrip(void **state)
{
	(void)state;
	nk_advice *a = parse_ok(full_plan);
	assert_int_equal(nk_advice_num_entries(a), 4);
	assert_string_equal(a->program, "./stencil");
	assert_int_equal(a->n_nodes, 4);
	assert_true(a->numa_factor > 2.09 && a->numa_factor < 2.11);
	assert_string_equal(a->pin.strategy, "sharing");
	assert_int_equal(a->pin.threads, 2);
	assert_true(a->pin.sharing[1] == 12.5);
	const struct nk__aplan_entry *e = &a->entries[0];
	assert_string_equal(e->policy, "block:threads=1,0");
	assert_int_equal(e->when, NK__WHEN_ALLOC);
	assert_int_equal(e->ev.size, 1048576);
	assert_int_equal(e->ev.dominant_node, 0);
	assert_string_equal(e->ev.diagnosis, "hot-spot");
	/* the candidates advise priced (issue 21 §1) */
	assert_int_equal(e->ev.n_cands, 3);
	assert_string_equal(e->ev.cands[1].policy, "block:threads=1,0");
	assert_true(e->ev.cands[0].remote_fraction == 0.5 && e->ev.cands[1].stall_ms == 0.08);
	assert_true(e->ev.cands[2].remote_fraction < 0);
	assert_true(e->ev.noise_ms == 0.002);
	assert_int_equal(a->entries[1].ev.n_cands, 0); /* absent: none (older plans) */
	e = &a->entries[1];
	assert_int_equal(e->n_ranges, 3);
	assert_int_equal(e->page_size, 4096);
	assert_int_equal(e->ranges[2].first, 20);
	assert_int_equal(e->ranges[2].node, 3);
	assert_null(e->variable);
	assert_true(e->ev.read_fraction < 0 && e->ev.dominant_node == -1);
	e = &a->entries[2];
	assert_int_equal(e->when, NK__WHEN_PHASE);
	assert_string_equal(e->phase, "solve");
	assert_true(e->ev.regularity < 0);
	assert_int_equal(a->entries[3].when, NK__WHEN_FIRST_PARALLEL);
	assert_int_equal(a->n_left_alone, 2);
	assert_string_equal(a->left_alone[0].reason, "process-local");
	assert_int_equal(a->left_alone[0].n_cands, 0);
	assert_int_equal(a->left_alone[1].n_cands, 2);
	assert_string_equal(a->left_alone[1].cands[1].policy, "cyclic");
	assert_int_equal(a->n_warnings, 1);

	char *t1 = NULL, *t2 = NULL;
	nk_error err = { 0, "" };
	assert_int_equal(nk_advice_format(a, &t1, &err), 0);
	nk_advice *b = parse_ok(t1);
	assert_int_equal(nk_advice_format(b, &t2, &err), 0);
	assert_string_equal(t1, t2);
	/* entry 1 has no evidence: none is written */
	assert_non_null(strstr(t1, "\"page_size\": 4096"));
	nk_advice_free(a);
	nk_advice_free(b);
	free(t1);
	free(t2);

	/* an empty plan: format, parse, format */
	assert_int_equal(nk_advice_create(&a), 0);
	assert_int_equal(nk_advice_num_entries(a), 0);
	assert_int_equal(nk_advice_format(a, &t1, &err), 0);
	assert_string_equal(t1, "{\n  \"format\": \"numakit-plan\",\n  \"version\": 1,\n  \"entries\": []\n}");
	b = parse_ok(t1);
	assert_int_equal(nk_advice_format(b, &t2, &err), 0);
	assert_string_equal(t1, t2);
	nk_advice_free(a);
	nk_advice_free(b);
	free(t1);
	free(t2);

	/* pin "cpus", odd doubles */
	a = parse_ok("{\"format\": \"numakit-plan\", \"version\": 1, \"pin\": {\"strategy\": \"cpus\", \"cpus\": [3, 1, 3]},"
		     " \"machine\": {\"numa_factor\": 1.2345678901234},"
		     " \"entries\": [{\"key\": \"name:x\", \"policy\": \"bind:nodes=1\","
		     " \"evidence\": {\"remote_fraction\": 0.333333333333333333}}]}");
	assert_int_equal(a->pin.threads, 3);
	assert_int_equal(a->pin.n_cpus, 3);
	assert_int_equal(nk_advice_format(a, &t1, &err), 0);
	b = parse_ok(t1);
	assert_int_equal(nk_advice_format(b, &t2, &err), 0);
	assert_string_equal(t1, t2);
	nk_advice_free(a);
	nk_advice_free(b);
	free(t1);
	free(t2);
}

/* Each bad plan with the code and a piece of the message it must give. */
struct bad {
	const char *json;
	int code;
	const char *msg;
};

#define HDR "{\"format\": \"numakit-plan\", \"version\": 1, "
#define ENT(x) HDR "\"entries\": [{\"key\": \"name:a\", \"policy\": \"cyclic\"}, " x "]}"

static const struct bad bads[] = {
	{ "{\"format\": \"numakit-plan\", \"version\": 1, \"entries\": [{\"key\": \"name:a\", \"policy\": \"none\", "
	  "\"evidence\": {\"candidates\": [{\"policy\": \"none\", \"stall_ms\": 1, \"cost\": 2}]}}]}",
	  NK_EPARSE, "entries[0] (key \"name:a\"): evidence: candidates[0]: unknown field \"cost\"" },
	{ "{\"format\": \"numakit-plan\", \"version\": 1, \"entries\": [{\"key\": \"name:a\", \"policy\": \"none\", "
	  "\"evidence\": {\"candidates\": [{\"policy\": \"none\", \"remote_fraction\": 0.5}]}}]}",
	  NK_EPARSE, "candidates[0]: stall_ms: missing" },
	{ "{\"format\": \"numakit-plan\", \"version\": 1, \"entries\": [{\"key\": \"name:a\", \"policy\": \"none\", "
	  "\"evidence\": {\"candidates\": [{\"policy\": \"none\", \"remote_fraction\": 1.5, \"stall_ms\": 1}]}}]}",
	  NK_EPARSE, "candidates[0]: remote_fraction: 1.5 is out of range" },
	{ "{\"format\": \"numakit-plan\", \"version\": 1, \"entries\": [{\"key\": \"name:a\", \"policy\": \"none\", "
	  "\"evidence\": {\"candidates\": {}}}]}",
	  NK_EPARSE, "candidates: expected an array, found an object" },
	{ "", NK_EPARSE, "plan: line" },
	{ "[1]", NK_EPARSE, "plan: expected a JSON object, found an array" },
	{ "{\"version\": 1, \"entries\": []}", NK_EPARSE, "format: missing (not a numakit plan)" },
	{ "{\"format\": \"numakit-machine\", \"version\": 1, \"entries\": []}", NK_EPARSE,
	  "format: expected \"numakit-plan\"" },
	{ "{\"format\": \"numakit-plan\", \"version\": 2, \"entries\": []}", NK_EVERSION,
	  "version: version 2 is not supported (this library reads 1)" },
	{ "{\"format\": \"numakit-plan\", \"version\": \"1\", \"entries\": []}", NK_EPARSE,
	  "version: expected an integer, found a string" },
	{ "{\"format\": \"numakit-plan\", \"version\": 1}", NK_EPARSE, "entries: missing" },
	{ HDR "\"entries\": [], \"entry\": []}", NK_EPARSE, "plan: unknown field \"entry\" (expected format, version," },
	{ HDR "\"entries\": {}}", NK_EPARSE, "entries: expected an array, found an object" },
	{ HDR "\"entries\": [], \"entries\": []}", NK_EPARSE, "duplicate object key" },
	{ HDR "\"program\": 3, \"entries\": []}", NK_EPARSE, "program: expected a string, found an integer" },
	{ ENT("7"), NK_EPARSE, "entries[1]: expected an object, found an integer" },
	{ ENT("{\"policy\": \"cyclic\"}"), NK_EPARSE, "entries[1]: key: missing" },
	{ ENT("{\"key\": 5, \"policy\": \"cyclic\"}"), NK_EPARSE, "entries[1]: key: expected a string, found an integer" },
	{ ENT("{\"key\": \"stack:pid1:0\", \"policy\": \"cyclic\"}"), NK_EPARSE,
	  "entries[1]: key: \"stack:pid1:0\" does not start with static:, heap: or name:" },
	{ ENT("{\"key\": \"heap:\", \"policy\": \"cyclic\"}"), NK_EPARSE, "does not start with static:, heap: or name:" },
	{ ENT("{\"key\": \"name:b\", \"polcy\": \"cyclic\"}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): unknown field \"polcy\" (expected variable, key, policy, when, phase," },
	{ ENT("{\"key\": \"name:b\"}"), NK_EPARSE, "entries[1] (key \"name:b\"): policy: missing" },
	{ ENT("{\"key\": \"name:b\", \"policy\": [\"cyclic\"]}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): policy: expected a string, found an array" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclc\"}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): policy: policy: \"cyclc\": unknown policy" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic:block=4K\"}"), NK_EPARSE, "entries[1] (key \"name:b\"): policy:" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"when\": \"later\"}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): when: \"later\" is not alloc, first-parallel or phase" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"when\": 1}"), NK_EPARSE,
	  "when: expected a string, found an integer" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"when\": \"phase\"}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): phase: missing (\"when\": \"phase\" needs the phase name)" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"when\": \"phase\", \"phase\": \"\"}"), NK_EPARSE,
	  "phase: expected a non-empty string" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"phase\": \"solve\"}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): phase: only allowed with \"when\": \"phase\"" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"pages\": [[0, 1, 0]]}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): pages: only allowed with \"policy\": \"pages\"" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"page_size\": 4096}"), NK_EPARSE,
	  "page_size: only allowed with \"policy\": \"pages\"" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"pages\": [[0, 1, 0]]}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): page_size: missing (policy \"pages\" needs it)" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"layout\": \"blocks\", \"size\": 4096}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): layout: \"blocks\" is for heap keys only" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"layout\": \"blocks\"}"), NK_EPARSE,
	  "size: missing (\"layout\": \"blocks\" needs the bytes of the blocks)" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"layout\": \"blocks\", \"size\": 0}"), NK_EPARSE,
	  "size: must be > 0" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"layout\": \"rows\", \"size\": 4096}"), NK_EPARSE,
	  "layout: \"rows\" is not instance or blocks" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"layout\": 1}"), NK_EPARSE,
	  "layout: expected a string, found an integer" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"size\": 4096}"), NK_EPARSE,
	  "size: only allowed with \"layout\": \"blocks\"" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"layout\": \"instance\", \"size\": 4096}"),
	  NK_EPARSE, "size: only allowed with \"layout\": \"blocks\"" },
	{ ENT("{\"key\": \"heap:a+0x1\", \"policy\": \"cyclic\", \"layout\": \"blocks\", \"size\": -5}"), NK_EPARSE,
	  "size:" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4000, \"pages\": [[0, 1, 0]]}"), NK_EPARSE,
	  "page_size: 4000 is not a power of two >= 4096" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096}"), NK_EPARSE,
	  "pages: missing (policy \"pages\" needs page ranges)" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": []}"), NK_EPARSE,
	  "pages: empty (policy \"pages\" needs at least one range)" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 1]]}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): pages[0]: expected [first, count, node]" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 1, \"0\"]]}"), NK_EPARSE,
	  "pages[0][2]: expected an integer, found a string" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 0, 1]]}"), NK_EPARSE,
	  "pages[0]: count 0 must be > 0" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[-1, 2, 1]]}"), NK_EPARSE,
	  "pages[0]: first page -1 is out of range" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 2, -1]]}"), NK_EPARSE,
	  "pages[0]: node -1 is out of range" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 4, 1], [3, 2, 0]]}"),
	  NK_EPARSE, "pages[1]: starts at page 3, inside or before pages[0] (0+4): ranges must be sorted and disjoint" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[8, 4, 1], [0, 2, 0]]}"),
	  NK_EPARSE, "pages[1]: starts at page 0, inside or before pages[0]" },
	{ ENT("{\"key\": \"name:a\", \"policy\": \"bind\"}"), NK_EPARSE,
	  "entries[1] (key \"name:a\"): duplicates entries[0]: same key and \"when\": \"alloc\"" },
	{ HDR "\"entries\": [{\"key\": \"name:a\", \"policy\": \"cyclic\", \"when\": \"phase\", \"phase\": \"x\"},"
	      "{\"key\": \"name:a\", \"policy\": \"cyclic\", \"when\": \"phase\", \"phase\": \"y\"},"
	      "{\"key\": \"name:a\", \"policy\": \"bind\", \"when\": \"phase\", \"phase\": \"x\"}]}",
	  NK_EPARSE, "entries[2] (key \"name:a\"): duplicates entries[0]: same key, \"when\": \"phase\" and phase \"x\"" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"evidence\": []}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): evidence: expected an object, found an array" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"evidence\": {\"sizes\": 1}}"), NK_EPARSE,
	  "entries[1] (key \"name:b\"): evidence: unknown field \"sizes\"" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"evidence\": {\"remote_fraction\": 1.5}}"), NK_EPARSE,
	  "evidence: remote_fraction: 1.5 is out of range 0..1" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"evidence\": {\"size\": -1}}"), NK_EPARSE,
	  "evidence: size: -1 is out of range" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"evidence\": {\"diagnosis\": 3}}"), NK_EPARSE,
	  "evidence: diagnosis: expected a string, found an integer" },
	{ ENT("{\"key\": \"name:b\", \"policy\": \"cyclic\", \"reason\": true}"), NK_EPARSE,
	  "reason: expected a string, found a boolean" },
	{ HDR "\"pin\": [], \"entries\": []}", NK_EPARSE, "pin: expected an object, found an array" },
	{ HDR "\"pin\": {\"threads\": 2}, \"entries\": []}", NK_EPARSE, "pin: strategy: missing" },
	{ HDR "\"pin\": {\"strategy\": \"spread\"}, \"entries\": []}", NK_EPARSE,
	  "pin: strategy: \"spread\" is not none, compact, scatter, sharing or cpus" },
	{ HDR "\"pin\": {\"strategy\": \"scatter\", \"thread\": 2}, \"entries\": []}", NK_EPARSE,
	  "pin: unknown field \"thread\"" },
	{ HDR "\"pin\": {\"strategy\": \"cpus\"}, \"entries\": []}", NK_EPARSE, "pin: cpus: missing" },
	{ HDR "\"pin\": {\"strategy\": \"cpus\", \"threads\": 3, \"cpus\": [0, 1]}, \"entries\": []}", NK_EPARSE,
	  "pin: cpus: 2 cpus for 3 threads" },
	{ HDR "\"pin\": {\"strategy\": \"cpus\", \"cpus\": [0, -1]}, \"entries\": []}", NK_EPARSE, "pin: cpus[1]:" },
	{ HDR "\"pin\": {\"strategy\": \"scatter\", \"cpus\": [0]}, \"entries\": []}", NK_EPARSE,
	  "pin: cpus: only allowed with \"strategy\": \"cpus\"" },
	{ HDR "\"pin\": {\"strategy\": \"sharing\", \"sharing\": [[0, 1], [1]]}, \"entries\": []}", NK_EPARSE,
	  "pin: sharing[1]: expected an array of 2 numbers" },
	{ HDR "\"pin\": {\"strategy\": \"sharing\", \"sharing\": [[0, -1], [1, 0]]}, \"entries\": []}", NK_EPARSE,
	  "pin: sharing[0][1]: expected a number >= 0" },
	{ HDR "\"pin\": {\"strategy\": \"sharing\", \"threads\": 3, \"sharing\": [[0]]}, \"entries\": []}", NK_EPARSE,
	  "pin: sharing: 1 rows for 3 threads" },
	{ HDR "\"pin\": {\"strategy\": \"sharing\"}, \"entries\": []}", NK_EPARSE, "pin: sharing: missing" },
	{ HDR "\"machine\": {\"nodes\": [1, 0]}, \"entries\": []}", NK_EPARSE,
	  "machine: nodes[1]: ids must be increasing" },
	{ HDR "\"machine\": {\"numa_factor\": \"2\"}, \"entries\": []}", NK_EPARSE,
	  "machine: numa_factor: expected a number, found a string" },
	{ HDR "\"machine\": {\"node\": []}, \"entries\": []}", NK_EPARSE, "machine: unknown field \"node\"" },
	{ HDR "\"left_alone\": [{\"variable\": \"x\"}], \"entries\": []}", NK_EPARSE, "left_alone[0]: key: missing" },
	{ HDR "\"left_alone\": [{\"key\": \"name:x\", \"why\": \"\"}], \"entries\": []}", NK_EPARSE,
	  "left_alone[0]: unknown field \"why\"" },
	{ HDR "\"warnings\": [1], \"entries\": []}", NK_EPARSE, "warnings: [0]: expected a string, found an integer" },
};

static void test_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bads / sizeof *bads; i++) {
		nk_advice *a = (nk_advice *)&a;
		nk_error err = { 0, "" };
		int rc = nk_advice_parse(bads[i].json, strlen(bads[i].json), &a, &err);
		if (rc != bads[i].code || err.code != rc || !strstr(err.message, bads[i].msg) ||
		    a != (nk_advice *)&a)
			fail_msg("case %zu: %s\n  rc %d (want %d), message \"%s\"\n  want it to contain \"%s\"", i,
				 bads[i].json, rc, bads[i].code, err.message, bads[i].msg);
	}
	nk_advice *a = NULL;
	assert_int_equal(nk_advice_parse(NULL, 0, &a, NULL), NK_EINVAL);
	assert_int_equal(nk_advice_parse("{}", 2, NULL, NULL), NK_EINVAL);
	assert_int_equal(nk_advice_create(NULL), NK_EINVAL);
	assert_int_equal(nk_advice_num_entries(NULL), 0);
	nk_advice_free(NULL);
}

static void test_format_refuses_invalid(void **state)
{
	(void)state;
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	char *t = NULL;
	assert_int_equal(nk_advice_create(&a), 0);
	struct nk__aplan_entry e;
	memset(&e, 0, sizeof(e));
	nk__aplan_evidence_unknown(&e.ev);
	e.key = "name:x";
	e.policy = "pages";
	e.page_size = 4096;
	struct nk__aplan_range r[2] = { { 0, 4, 0 }, { 2, 4, 1 } };
	e.ranges = r;
	e.n_ranges = 2;
	assert_int_equal(nk__aplan_add(a, &e), 0);
	assert_int_equal(nk_advice_format(a, &t, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "ranges must be sorted and disjoint"));
	assert_null(t);
	a->entries[0].ranges[1].first = 4;
	assert_int_equal(nk_advice_format(a, &t, &err), 0);
	free(t);
	assert_non_null(nk__aplan_find(a, "name:x", NK__WHEN_ALLOC, NULL));
	assert_null(nk__aplan_find(a, "name:x", NK__WHEN_PHASE, "p"));
	assert_int_equal(nk__aplan_warn(a, "w"), 0);
	assert_int_equal(nk__aplan_skip(a, "heap:pid3:site1", NULL, "process-local"), 0);
	assert_int_equal(nk_advice_format(a, &t, &err), 0);
	free(t);
	nk_advice_free(a);

	assert_true(nk__aplan_key_local("heap:pid12:site3"));
	assert_true(nk__aplan_key_local("static:pid9:7f00"));
	assert_false(nk__aplan_key_local("name:rapid"));
	assert_false(nk__aplan_key_local("name:x:pidx"));
	assert_true(nk__aplan_key_valid("heap:a+0x1"));
	assert_false(nk__aplan_key_valid("file:/x"));
	assert_false(nk__aplan_key_valid("name:"));
}

static nk_advice *plan_with(const char *entry)
{
	char buf[2048];
	snprintf(buf, sizeof buf, HDR "\"entries\": [%s]}", entry);
	return parse_ok(buf);
}

static void check_plan(nk_machine *m, const char *entry, int code, const char *msg)
{
	nk_advice *a = plan_with(entry);
	nk_error err = { 0, "" };
	int rc = nk_advice_check(a, m, &err);
	if (rc != code || (msg && !strstr(err.message, msg)))
		fail_msg("check of %s: rc %d (want %d), message \"%s\" (want \"%s\")", entry, rc, code, err.message,
			 msg ? msg : "");
	nk_advice_free(a);
}

static void test_check(void **state)
{
	(void)state;
	/* nodes 0, 4, 9; node 9 (index 2) has no memory */
	nk_machine *m = nk_test_synth("nodes=3 ids=0,4,9 memless=2 cores=2");
	nk_error err = { 0, "" };

	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"cyclic\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"none\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"cyclic:nodes=0,4\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"block:split=rows\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"block_exclusive\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"block:split=cols\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"block:threads=9,0,4\"}", 0, NULL); /* cpu node 9: nearest */
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"cyclic:nodes=0,5\"}", NK_ENODEV,
		     "entries[0] (key \"name:a\"): policy node 5 does not exist on this machine (nodes 0,4,9)");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"bind:nodes=9\"}", NK_ENODEV,
		     "entries[0] (key \"name:a\"): policy node 9 has no memory");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"weighted:weights=0=2/7=1\"}", NK_ENODEV,
		     "policy weight node 7 does not exist");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"block:threads=0,3\"}", NK_ENODEV,
		     "policy thread node 3 does not exist");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"cyclic_neighbors:home=2\"}", NK_ENODEV,
		     "policy home node 2 does not exist");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"prime_mapp:prime=3,nodes=0,4\"}", 0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"cyclic_neighbors:count=3\"}", NK_EINVAL, "count 3");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 2, 0], [2, 2, 4]]}",
		     0, NULL);
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 2, 0], [2, 2, 1]]}",
		     NK_ENODEV, "entries[0] (key \"name:a\"): pages[1]:  node 1 does not exist");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[5, 2, 9]]}",
		     NK_ENODEV, "pages[0]:  node 9 has no memory");

	/* pin cpus: the machine has 6 cpus (0-5) */
	nk_advice *a = parse_ok(HDR "\"pin\": {\"strategy\": \"cpus\", \"cpus\": [0, 5]}, \"entries\": []}");
	assert_int_equal(nk_advice_check(a, m, &err), 0);
	nk_advice_free(a);
	a = parse_ok(HDR "\"pin\": {\"strategy\": \"cpus\", \"cpus\": [0, 6]}, \"entries\": []}");
	assert_int_equal(nk_advice_check(a, m, &err), NK_ENODEV);
	assert_string_equal(err.message, "pin: cpus[1]: cpu 6 does not exist on this machine");
	assert_int_equal(nk_advice_check(a, NULL, &err), NK_EINVAL);
	nk_advice_free(a);
	nk_machine_free(m);

	/* nodes the process may not use */
	m = nk_test_synth("nodes=2 allowed_nodes=0");
	check_plan(m, "{\"key\": \"name:a\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 1, 1]]}",
		     NK_EPERM, "node 1: this process may not allocate there");
	nk_machine_free(m);
}

/* A profile with three variables, built by hand. */
static nk_profile *fake_profile(void)
{
	struct nk__analysis *an = calloc(1, sizeof(*an));
	assert_non_null(an);
	an->n_vars = 4;
	an->vars = calloc(an->n_vars, sizeof(*an->vars));
	static const char *const names[] = { "grid", "buf", "buf", "stack of thread 1" };
	static const char *const keys[] = { "static:app:grid", "heap:app+0x10", "heap:app+0x20", "stack:pid1:1" };
	for (size_t i = 0; i < an->n_vars; i++) {
		struct nk__an_var *v = &an->vars[i];
		v->name = strdup(names[i]);
		v->key = strdup(keys[i]);
		v->size = 1 << 20;
		v->samples = 100;
		v->local = 30;
		v->remote = 70;
		v->reads = 90;
		v->writes = 10;
		v->threads = 4;
		v->pages = 10;
		v->pages_cross_shared = 5;
		v->regularity = 0.9;
		v->dominant_node = 1;
		v->dominant_share = 0.8;
		v->diag = NK__DIAG_HOTSPOT;
	}
	nk_profile *p = NULL;
	assert_int_equal(nk__profile_from_analysis(an, &p, NULL), 0);
	return p;
}

static void test_set(void **state)
{
	(void)state;
	nk_profile *p = fake_profile();
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	char *t = NULL;

	assert_int_equal(nk_advice_create(&a), 0);
	assert_int_equal(nk__aplan_skip(a, "static:app:grid", "grid", "small"), 0);
	assert_int_equal(nk_advice_set(a, p, "grid", "cyclic", &err), 0);
	assert_int_equal(nk_advice_num_entries(a), 1);
	assert_int_equal(a->n_left_alone, 0); /* it has an entry now */
	struct nk__aplan_entry *e = &a->entries[0];
	assert_string_equal(e->key, "static:app:grid");
	assert_string_equal(e->variable, "grid");
	assert_int_equal(e->when, NK__WHEN_ALLOC);
	assert_int_equal(e->ev.size, 1 << 20);
	assert_true(e->ev.remote_fraction > 0.69 && e->ev.remote_fraction < 0.71);
	assert_true(e->ev.read_fraction > 0.89 && e->ev.read_fraction < 0.91);
	assert_true(e->ev.shared_pages == 0.5);
	assert_string_equal(e->ev.diagnosis, "hot-spot");
	/* replace, by key */
	assert_int_equal(nk_advice_set(a, p, "static:app:grid", "bind:nodes=1", &err), 0);
	assert_int_equal(nk_advice_num_entries(a), 1);
	assert_string_equal(a->entries[0].policy, "bind:nodes=1");
	/* without a profile: a key only; the entry keeps its evidence */
	assert_int_equal(nk_advice_set(a, NULL, "static:app:grid", "none", &err), 0);
	assert_int_equal(nk_advice_num_entries(a), 1);
	assert_string_equal(a->entries[0].policy, "none");
	assert_string_equal(a->entries[0].variable, "grid");
	assert_int_equal(a->entries[0].ev.size, 1 << 20);
	assert_int_equal(nk_advice_set(a, NULL, "name:other", "cyclic", &err), 0);
	assert_int_equal(nk_advice_num_entries(a), 2);
	/* a phase entry of the same key is another entry */
	a->entries[1].when = NK__WHEN_PHASE;
	a->entries[1].phase = strdup("solve");
	assert_int_equal(nk_advice_set(a, NULL, "name:other", "bind:nodes=0", &err), 0);
	assert_int_equal(nk_advice_num_entries(a), 3);

	assert_int_equal(nk_advice_set(a, p, "buf", "cyclic", &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "2 variables are named \"buf\": give the key"));
	assert_int_equal(nk_advice_set(a, p, "heap:app+0x20", "cyclic", &err), 0);
	assert_int_equal(nk_advice_set(a, p, "nothing", "cyclic", &err), NK_ENOENT);
	assert_non_null(strstr(err.message, "no variable \"nothing\" in the profile"));
	assert_int_equal(nk_advice_set(a, p, "heap:app+0x99", "cyclic", &err), NK_ENOENT);
	assert_int_equal(nk_advice_set(a, p, "stack of thread 1", "cyclic", &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "a plan can only place statics"));
	assert_int_equal(nk_advice_set(a, NULL, "grid", "cyclic", &err), NK_EINVAL);
	assert_int_equal(nk_advice_set(a, NULL, "heap:pid3:site1", "cyclic", &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "local to the profiled process"));
	assert_int_equal(nk_advice_set(a, p, "grid", "cyclc", &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "unknown policy"));
	assert_int_equal(nk_advice_set(a, p, "grid", "pages", &err), NK_EINVAL);
	assert_int_equal(nk_advice_set(NULL, p, "grid", "cyclic", &err), NK_EINVAL);
	assert_int_equal(nk_advice_num_entries(a), 4);

	assert_int_equal(nk_advice_format(a, &t, &err), 0);
	nk_advice *b = parse_ok(t);
	char *t2 = NULL;
	assert_int_equal(nk_advice_format(b, &t2, &err), 0);
	assert_string_equal(t, t2);
	free(t);
	free(t2);
	nk_advice_free(b);
	nk_advice_free(a);
	nk_profile_free(p);
}

static void test_load(void **state)
{
	(void)state;
	nk_advice *a = NULL;
	nk_error err = { 0, "" };
	char *path = nk_test_tmpfile(full_plan, strlen(full_plan));
	assert_int_equal(nk_advice_load(path, &a, &err), 0);
	assert_int_equal(nk_advice_num_entries(a), 4);
	nk_advice_free(a);
	unlink(path);
	free(path);

	const char bad[] = HDR "\"entries\": [{\"key\": \"name:a\", \"policy\": \"cyclic\", \"nodes\": 1}]}";
	path = nk_test_tmpfile(bad, strlen(bad));
	assert_int_equal(nk_advice_load(path, &a, &err), NK_EPARSE);
	char want[600];
	snprintf(want, sizeof want, "%s: entries[0] (key \"name:a\"): unknown field \"nodes\"", path);
	assert_non_null(strstr(err.message, want));
	unlink(path);
	free(path);

	assert_int_equal(nk_advice_load("/nonexistent/plan.json", &a, &err), NK_ENOENT);
	assert_int_equal(nk_advice_load("/", &a, &err), NK_EIO);
	assert_int_equal(nk_advice_load(NULL, &a, &err), NK_EINVAL);
}

/* job/share.h: the share goes position by position, the other nodes in id order. */
static void test_share_map(void **state)
{
	(void)state;
	const int all[] = { 0, 1, 2, 3 };
	int map[4] = { -9, -9, -9, -9 };
	/* rank 1's share 2,3 into rank 0's 0,1: 2->0, 3->1, and 0->2, 1->3 */
	assert_int_equal(nk__share_node_map(all, 4, (const int[]){ 2, 3 }, (const int[]){ 0, 1 }, 2, map), 0);
	assert_int_equal(map[0], 2);
	assert_int_equal(map[1], 3);
	assert_int_equal(map[2], 0);
	assert_int_equal(map[3], 1);
	/* one node: 3 onto 1; the rest (0,1,2) onto (0,2,3) in order */
	assert_int_equal(nk__share_node_map(all, 4, (const int[]){ 3 }, (const int[]){ 1 }, 1, map), 0);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 2);
	assert_int_equal(map[2], 3);
	assert_int_equal(map[3], 1);
	/* the same share: the identity, whatever the order of all */
	const int shuffled[] = { 2, 0, 3, 1 };
	assert_int_equal(nk__share_node_map(shuffled, 4, (const int[]){ 1, 2 }, (const int[]){ 1, 2 }, 2, map), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(map[i], shuffled[i]);
	assert_int_equal(nk__share_map_node(shuffled, map, 4, 7), 7);
	assert_int_equal(nk__share_map_node(shuffled, map, 4, -1), -1);
	/* refused, map untouched */
	int keep[4] = { 5, 5, 5, 5 };
	assert_int_equal(nk__share_node_map(all, 4, (const int[]){ 3, 2 }, (const int[]){ 0, 1 }, 2, keep), NK_EINVAL);
	assert_int_equal(nk__share_node_map(all, 4, (const int[]){ 2, 9 }, (const int[]){ 0, 1 }, 2, keep), NK_EINVAL);
	assert_int_equal(nk__share_node_map(all, 4, (const int[]){ 2 }, (const int[]){ 0 }, 0, keep), NK_EINVAL);
	assert_int_equal(nk__share_node_map((const int[]){ 0, 0 }, 2, (const int[]){ 0 }, (const int[]){ 0 }, 1, keep),
			 NK_EINVAL);
	for (int i = 0; i < 4; i++)
		assert_int_equal(keep[i], 5);
}

static const char share_plan[] =
	"{\"format\": \"numakit-plan\", \"version\": 1, \"runs\": 2,\n"
	" \"machine\": {\"nodes\": [0, 1, 2, 3], \"share\": [0, 1]},\n"
	" \"pin\": {\"strategy\": \"cpus\", \"threads\": 2, \"cpus\": [0, 2]},\n"
	" \"entries\": [\n"
	"  {\"key\": \"name:a\", \"policy\": \"block:threads=0,1,1\", \"when\": \"alloc\",\n"
	"   \"evidence\": {\"size\": 4096, \"dominant_node\": 0,\n"
	"                \"candidates\": [{\"policy\": \"bind:nodes=1\", \"remote_fraction\": 0.1, \"stall_ms\": 1}]}},\n"
	"  {\"key\": \"name:b\", \"policy\": \"weighted:nodes=0,1,weights=0=3/1=1\", \"when\": \"alloc\"},\n"
	"  {\"key\": \"name:c\", \"policy\": \"cyclic\", \"when\": \"alloc\"},\n"
	"  {\"key\": \"name:d\", \"policy\": \"pages\", \"page_size\": 4096, \"pages\": [[0, 4, 0], [4, 4, 3]]}\n"
	" ]}";

/* nk_advice_resolve_share: every node id of the plan onto the rank's share; refusals change nothing. */
static void test_resolve_share(void **state)
{
	(void)state;
	nk_error err = { 0 };
	nk_advice *a = NULL;
	nk_machine *m = NULL;
	int nodes[4];
	assert_int_equal(nk_machine_load_synthetic("nodes=4 cores=2", &m, &err), 0);
	if (nk_advice_parse(share_plan, strlen(share_plan), &a, &err))
		fail_msg("%s", err.message);
	assert_int_equal(nk_advice_share(a, nodes, 4), 2);
	assert_int_equal(nodes[0], 0);
	assert_int_equal(nodes[1], 1);
	assert_int_equal(nk_advice_share(a, NULL, 0), 2);
	assert_int_equal(nk_advice_share(NULL, NULL, 0), NK_EINVAL);

	/* refused: a share of another size, a node the machine lacks; the plan is unchanged */
	char *before = NULL, *after = NULL;
	assert_int_equal(nk_advice_format(a, &before, &err), 0);
	assert_int_equal(nk_advice_resolve_share(a, m, (const int[]){ 2 }, 1, &err), NK_EINVAL);
	assert_non_null(strstr(err.message, "2 nodes each, this rank's share has 1"));
	assert_int_equal(nk_advice_resolve_share(a, m, (const int[]){ 2, 7 }, 2, &err), NK_EINVAL);
	assert_int_equal(nk_advice_resolve_share(a, NULL, (const int[]){ 2, 3 }, 2, &err), NK_EINVAL); /* cpus need m */
	assert_int_equal(nk_advice_format(a, &after, &err), 0);
	assert_string_equal(before, after);
	free(after);
	free(before);
	/* onto its own share: the identity (policy texts in canonical form) */
	assert_int_equal(nk_advice_resolve_share(a, m, (const int[]){ 0, 1 }, 2, &err), 0);
	assert_int_equal(nk_advice_format(a, &before, &err), 0);
	assert_non_null(strstr(before, "\"policy\": \"block:threads=0,1*2\""));

	/* onto 3,2 (any order): 0->2, 1->3, 2->0, 3->1; cpus: the k-th of node 0 -> the k-th of node 2 */
	assert_int_equal(nk_advice_resolve_share(a, m, (const int[]){ 3, 2 }, 2, &err), 0);
	assert_int_equal(nk_advice_format(a, &after, &err), 0);
	assert_non_null(strstr(after, "\"share\": [2, 3]"));
	assert_non_null(strstr(after, "\"policy\": \"block:threads=2,3*2\""));
	assert_non_null(strstr(after, "\"policy\": \"bind:nodes=3\""));
	assert_non_null(strstr(after, "\"dominant_node\": 2"));
	assert_non_null(strstr(after, "weighted:nodes=2-3,weights=2=3/3=1"));
	assert_non_null(strstr(after, "\"policy\": \"cyclic\""));
	assert_non_null(strstr(after, "[0, 4, 2]"));
	assert_non_null(strstr(after, "[4, 4, 1]"));
	assert_non_null(strstr(after, "\"cpus\": [4, 6]"));
	/* and back: the plan refers to 2,3 now; resolving onto 0,1 gives the original */
	assert_int_equal(nk_advice_resolve_share(a, m, (const int[]){ 0, 1 }, 2, &err), 0);
	free(after);
	assert_int_equal(nk_advice_format(a, &after, &err), 0);
	assert_string_equal(before, after);
	free(before);
	free(after);
	nk_advice_free(a);

	/* a plan without a share applies as written */
	a = NULL;
	assert_int_equal(nk_advice_create(&a), 0);
	assert_int_equal(nk_advice_share(a, nodes, 4), 0);
	assert_int_equal(nk_advice_resolve_share(a, m, (const int[]){ 3 }, 1, &err), 0);
	nk_advice_free(a);

	/* the reader: a share needs the machine's nodes, ids among them, increasing */
	static const char *const bad[] = {
		"{\"format\": \"numakit-plan\", \"version\": 1, \"machine\": {\"share\": [0]}, \"entries\": []}",
		"{\"format\": \"numakit-plan\", \"version\": 1, \"machine\": {\"nodes\": [0, 1], \"share\": [2]}, \"entries\": []}",
		"{\"format\": \"numakit-plan\", \"version\": 1, \"machine\": {\"nodes\": [0, 1], \"share\": [1, 0]}, \"entries\": []}",
		"{\"format\": \"numakit-plan\", \"version\": 1, \"machine\": {\"nodes\": [0, 1], \"share\": []}, \"entries\": []}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		a = NULL;
		assert_int_equal(nk_advice_parse(bad[i], strlen(bad[i]), &a, &err), NK_EPARSE);
		assert_non_null(strstr(err.message, "share"));
		assert_null(a);
	}
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_format_refuses_invalid),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_share_map),
		cmocka_unit_test(test_resolve_share),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
