/* SPDX-License-Identifier: BSD-3-Clause
 * The hw sampler: sysfs formats and events (fake trees for Intel, hybrid
 * Intel, AMD IBS and neither), the perf_event_attr it builds, decoding of
 * synthesised ring buffers (both layouts, wrap-around, LOST, unknown and
 * corrupt records), the data_src and IBS tables, and the live failover on
 * this host (no PMU: NK_ENOSYS with a reason, no fd leaked).
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/hw_impl.h"
#include "profile/perf_decode.h"

/* ------------------------------------------------------------ fake trees */

static void put(const char *root, const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	for (char *s = path + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(path, 0755);
			*s = '/';
		}
	FILE *f = fopen(path, "w");
	if (!f)
		fail_msg("cannot create %s", path);
	fputs(text, f);
	fclose(f);
}

static char *tree(void)
{
	char *root = strdup("/tmp/nkhwXXXXXX");
	assert_non_null(root);
	assert_non_null(mkdtemp(root));
	/* something that is not a memory PMU, as on every Linux */
	put(root, "sys/bus/event_source/devices/software/type", "1\n");
	return root;
}

static void rm_tree(char *root)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	free(root);
}

#define DEV "sys/bus/event_source/devices/"

static void intel_pmu(const char *root, const char *name, const char *type, int stores, int aux, const char *cpus)
{
	char rel[256];
#define P(file, text) (snprintf(rel, sizeof rel, DEV "%s/%s", name, file), put(root, rel, text))
	P("type", type);
	P("format/event", "config:0-7\n");
	P("format/umask", "config:8-15\n");
	P("format/inv", "config:23\n");
	P("format/cmask", "config:24-31\n");
	P("format/ldlat", "config1:0-15\n");
	P("format/frontend", "config1:0-23\n");
	P("events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
	if (stores)
		P("events/mem-stores", "event=0xd0,umask=0x82\n");
	if (aux)
		P("events/mem-loads-aux", "event=0x03,umask=0x82\n");
	if (cpus)
		P("cpus", cpus);
#undef P
}

static void amd_pmu(const char *root, const char *type)
{
	put(root, DEV "ibs_op/type", type);
	put(root, DEV "ibs_op/format/cnt_ctl", "config:19\n");
	put(root, DEV "ibs_op/format/l3missonly", "config:16\n");
	put(root, DEV "ibs_fetch/type", "10\n");
}

/* ------------------------------------------------------------ formats */

static void test_format_parse(void **state)
{
	struct nk__perf_format f;
	nk_error err = { 0 };
	uint64_t cfg[NK__PERF_NREGS] = { 0 };

	assert_int_equal(nk__perf_format_parse("config:0-7\n", 11, &f, &err), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.r[0].reg, 0);
	assert_int_equal(f.r[0].lo, 0);
	assert_int_equal(f.r[0].hi, 7);
	assert_int_equal(nk__perf_format_parse("config1:0-15", 12, &f, &err), 0);
	assert_int_equal(f.r[0].reg, 1);
	assert_int_equal(nk__perf_format_width(&f), 16);
	assert_int_equal(nk__perf_format_parse("config:21", 9, &f, &err), 0);
	assert_int_equal(nk__perf_format_width(&f), 1);
	assert_int_equal(nk__perf_format_apply(&f, 1, cfg), 0);
	assert_true(cfg[0] == 1ull << 21);
	assert_int_equal(nk__perf_format_apply(&f, 2, cfg), NK_ERANGE);
	assert_true(cfg[0] == 1ull << 21); /* unchanged */

	/* a field split over two ranges: low 8 bits in 0-7, the next 4 in 32-35 */
	assert_int_equal(nk__perf_format_parse("config:0-7,32-35", 16, &f, &err), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(nk__perf_format_width(&f), 12);
	memset(cfg, 0xff, sizeof cfg);
	assert_int_equal(nk__perf_format_apply(&f, 0xabc, cfg), 0);
	assert_true(cfg[0] == ((~0ull & ~(0xfull << 32) & ~0xffull) | 0xbcull | 0xaull << 32));
	assert_int_equal(nk__perf_format_apply(&f, 0x1000, cfg), NK_ERANGE);

	assert_int_equal(nk__perf_format_parse("config2:0-63", 12, &f, &err), 0);
	assert_int_equal(nk__perf_format_width(&f), 64);
	assert_int_equal(nk__perf_format_apply(&f, ~0ull, cfg), 0);
	assert_true(cfg[2] == ~0ull);

	static const char *const bad[] = { "", "confg:1", "config", "config:", "config:7-3", "config:64",
					   "config4:1", "config:1,", "config:1-", "config:x", "config:0-7;",
					   "config:0,1,2,3,4,5,6,7,8" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err.message[0] = '\0';
		if (nk__perf_format_parse(bad[i], strlen(bad[i]), &f, &err) != NK_EPARSE)
			fail_msg("\"%s\" accepted", bad[i]);
		assert_true(strlen(err.message) > 0);
	}
}

static void test_event_encode(void **state)
{
	struct nk__perf_pmu_format pf = { 0 };
	uint64_t cfg[NK__PERF_NREGS];
	nk_error err = { 0 };

	assert_int_equal(nk__perf_pmu_add_term(&pf, "event", "config:0-7", 10, &err), 0);
	assert_int_equal(nk__perf_pmu_add_term(&pf, "umask", "config:8-15", 11, &err), 0);
	assert_int_equal(nk__perf_pmu_add_term(&pf, "inv", "config:23", 9, &err), 0);
	assert_int_equal(nk__perf_pmu_add_term(&pf, "ldlat", "config1:0-15", 12, &err), 0);
	assert_int_equal(nk__perf_pmu_add_term(&pf, "bad", "config9:1", 9, &err), NK_EPARSE);

	assert_int_equal(nk__perf_event_encode(&pf, "event=0xcd,umask=0x1,ldlat=3", "ldlat=30", cfg, &err), 0);
	assert_true(cfg[0] == 0x1cd);
	assert_true(cfg[1] == 30); /* the later term wins */
	assert_true(cfg[2] == 0 && cfg[3] == 0);
	assert_int_equal(nk__perf_event_encode(&pf, "event=0xd0,umask=0x82,inv", NULL, cfg, &err), 0);
	assert_true(cfg[0] == (0x82d0 | 1u << 23));
	assert_int_equal(nk__perf_event_encode(&pf, "event=208", NULL, cfg, &err), 0);
	assert_true(cfg[0] == 208);
	assert_int_equal(nk__perf_event_encode(&pf, "config=0x1234567890,config1=5,event=1", NULL, cfg, &err), 0);
	assert_true(cfg[0] == 0x1234567801ull && cfg[1] == 5);
	assert_int_equal(nk__perf_event_encode(&pf, "config2=0xffffffffffffffff", NULL, cfg, &err), 0);
	assert_true(cfg[0] == 0 && cfg[2] == ~0ull);

	cfg[0] = 77;
	assert_int_equal(nk__perf_event_encode(&pf, "event=0xcd,period=100", NULL, cfg, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "period"));
	assert_true(cfg[0] == 77);
	assert_int_equal(nk__perf_event_encode(&pf, "event=0x1cd", NULL, cfg, &err), NK_ERANGE);
	assert_int_equal(nk__perf_event_encode(&pf, "event=zz", NULL, cfg, &err), NK_EPARSE);
	assert_int_equal(nk__perf_event_encode(&pf, "event=", NULL, cfg, &err), NK_EPARSE);
	assert_int_equal(nk__perf_event_encode(&pf, "=3", NULL, cfg, &err), NK_EPARSE);
	assert_int_equal(nk__perf_event_encode(&pf, "event=0xffffffffffffffffff", NULL, cfg, &err), NK_EPARSE);
	assert_true(cfg[0] == 77);
}

/* ------------------------------------------------------------ discovery */

static void test_discover_intel(void **state)
{
	char *root = tree();
	struct nk__hw_plan plan;
	nk_error err = { 0 };

	intel_pmu(root, "cpu", "4\n", 1, 0, NULL);
	if (nk__hw_discover(root, 30, &plan, &err))
		fail_msg("%s", err.message);
	assert_int_equal(plan.vendor, NK__HW_INTEL);
	assert_int_equal(plan.n_pmu, 1);
	assert_string_equal(plan.pmu[0].name, "cpu");
	assert_int_equal(plan.pmu[0].type, 4);
	assert_true(plan.pmu[0].load[0] == 0x1cd);
	assert_true(plan.pmu[0].load[1] == 30);
	assert_true(plan.pmu[0].has_store);
	assert_true(plan.pmu[0].store[0] == 0x82d0);
	assert_true(plan.pmu[0].store[1] == 0);
	assert_false(plan.pmu[0].has_aux);
	assert_int_equal(plan.pmu[0].cpus.n, 0);

	struct perf_event_attr a;
	nk__hw_attr(&plan, 0, NK__HW_EV_LOAD, 0, 2, 1, &a);
	assert_int_equal(a.type, 4);
	assert_int_equal(a.size, sizeof a);
	assert_true(a.config == 0x1cd && a.config1 == 30);
	assert_true(a.sample_type == (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
				      PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC |
				      NK__PERF_SAMPLE_WEIGHT_STRUCT));
	assert_int_equal(a.precise_ip, 2);
	assert_true(a.freq && a.sample_freq == NK__HW_DEFAULT_FREQ);
	assert_true(a.inherit && a.enable_on_exec && a.disabled && a.exclude_kernel);
	assert_true(a.use_clockid && a.clockid == CLOCK_MONOTONIC);
	assert_true(a.wakeup_events > 0);
	nk__hw_attr(&plan, 0, NK__HW_EV_STORE, 5000, 1, 0, &a);
	assert_true(a.config == 0x82d0 && a.config1 == 0);
	assert_true(a.sample_type & PERF_SAMPLE_WEIGHT);
	assert_false(a.sample_type & NK__PERF_SAMPLE_WEIGHT_STRUCT);
	assert_false(a.freq);
	assert_true(a.sample_period == 5000);
	assert_int_equal(a.precise_ip, 1);
	assert_true((a.sample_type & ~NK__PERF_SAMPLE_DECODABLE) == 0);
	nk__hw_plan_free(&plan);

	/* a corrupt format file is named */
	put(root, DEV "cpu/format/umask", "config:8-\n");
	assert_int_equal(nk__hw_discover(root, 30, &plan, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "format/umask"));
	put(root, DEV "cpu/format/umask", "config:8-15\n");
	/* an event naming a term the format directory lacks */
	put(root, DEV "cpu/events/mem-loads", "event=0xcd,umask=0x1,foo=3\n");
	assert_int_equal(nk__hw_discover(root, 30, &plan, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "events/mem-loads"));
	put(root, DEV "cpu/events/mem-loads", "event=0xcd,umask=0x1,ldlat=3\n");
	put(root, DEV "cpu/type", "four\n");
	assert_int_equal(nk__hw_discover(root, 30, &plan, &err), NK_EPARSE);
	assert_non_null(strstr(err.message, "cpu/type"));
	rm_tree(root);
}

static void test_discover_hybrid(void **state)
{
	char *root = tree();
	struct nk__hw_plan plan;
	nk_error err = { 0 };

	intel_pmu(root, "cpu_core", "8\n", 1, 1, "0-7\n");
	intel_pmu(root, "cpu_atom", "10\n", 1, 0, "8-15\n");
	put(root, DEV "cpu_other/type", "12\n"); /* no mem-loads: not used */
	if (nk__hw_discover(root, 50, &plan, &err))
		fail_msg("%s", err.message);
	assert_int_equal(plan.vendor, NK__HW_INTEL);
	assert_int_equal(plan.n_pmu, 2);
	assert_string_equal(plan.pmu[0].name, "cpu_atom");
	assert_string_equal(plan.pmu[1].name, "cpu_core");
	assert_int_equal(plan.pmu[0].type, 10);
	assert_int_equal(plan.pmu[1].type, 8);
	assert_false(plan.pmu[0].has_aux);
	assert_true(plan.pmu[1].has_aux);
	assert_true(plan.pmu[1].aux[0] == 0x8203);
	assert_true(plan.pmu[1].load[1] == 50);
	assert_int_equal(plan.pmu[0].cpus.n, 8);
	assert_int_equal(plan.pmu[0].cpus.v[0], 8);
	assert_int_equal(plan.pmu[1].cpus.n, 8);
	assert_int_equal(plan.pmu[1].cpus.v[7], 7);
	struct perf_event_attr a;
	nk__hw_attr(&plan, 1, NK__HW_EV_AUX, 0, 2, 1, &a);
	assert_int_equal(a.type, 8);
	assert_true(a.config == 0x8203);
	assert_true(a.sample_type == 0 && a.precise_ip == 0);
	nk__hw_plan_free(&plan);
	rm_tree(root);
}

static void test_discover_amd(void **state)
{
	char *root = tree();
	struct nk__hw_plan plan;
	nk_error err = { 0 };

	amd_pmu(root, "11\n");
	if (nk__hw_discover(root, 30, &plan, &err))
		fail_msg("%s", err.message);
	assert_int_equal(plan.vendor, NK__HW_AMD);
	assert_int_equal(plan.n_pmu, 0);
	assert_int_equal(plan.ibs_type, 11);
	assert_true(plan.ibs[0] == 1ull << 19);
	assert_true(plan.ibs_l3missonly);

	struct perf_event_attr a;
	nk__hw_attr(&plan, 0, NK__HW_EV_IBS, 100, 2, 1, &a);
	assert_int_equal(a.type, 11);
	assert_true(a.config == 1ull << 19);
	assert_true(a.sample_type == (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
				      PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW));
	assert_int_equal(a.precise_ip, 0);
	assert_true(a.sample_period == 0x90);
	nk__hw_attr(&plan, 0, NK__HW_EV_IBS, 100007, 0, 0, &a);
	assert_true(a.sample_period == (100007 & ~0xfull));
	assert_true(a.use_clockid && a.inherit && a.enable_on_exec);
	nk__hw_plan_free(&plan);
	rm_tree(root);
}

static void test_discover_neither(void **state)
{
	char *root = tree();
	struct nk__hw_plan plan;
	nk_error err = { 0 };

	put(root, DEV "cpu/type", "4\n"); /* a core PMU without mem-loads (e.g. an old Intel, or Arm) */
	assert_int_equal(nk__hw_discover(root, 30, &plan, &err), NK_ENOSYS);
	assert_int_equal(err.code, NK_ENOSYS);
	assert_non_null(strstr(err.message, "no precise memory sampling here: no mem-loads event in "
					    "/sys/bus/event_source/devices/cpu/events (not an Intel CPU with PEBS load "
					    "latency) and no ibs_op PMU (not AMD IBS)"));
	rm_tree(root);
	/* a root without any event_source directory */
	root = strdup("/tmp/nkhwXXXXXX");
	assert_non_null(mkdtemp(root));
	assert_int_equal(nk__hw_discover(root, 30, &plan, &err), NK_ENOSYS);
	rm_tree(root);
}

/* ------------------------------------------------------------ live failover */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void expect_failover(const char *root, nk_machine *m, const char *const *reasons)
{
	struct nk__hw *h = (struct nk__hw *)&h;
	nk_error err = { 0 };
	int before = count_fds(), rc;

	rc = root ? nk__hw_open_at(root, getpid(), m, 0, &h, &err) : nk__hw_open(getpid(), m, 0, &h, &err);
	if (rc == 0) { /* a machine with a PMU: it must work, then */
		struct nk__hw_samples s = { 0 };
		assert_int_equal(nk__hw_drain(h, &s, &err), 0);
		assert_true(strlen(nk__hw_describe(h)) > 0);
		nk__hw_samples_free(&s);
		nk__hw_close(h);
		assert_int_equal(count_fds(), before);
		return;
	}
	assert_int_equal(rc, NK_ENOSYS);
	assert_int_equal(err.code, NK_ENOSYS);
	assert_ptr_equal(h, (struct nk__hw *)&h); /* untouched */
	assert_int_equal(count_fds(), before);
	print_message("    failover: %s\n", err.message);
	assert_true(strncmp(err.message, "no precise memory sampling here: ", 33) == 0);
	for (const char *const *r = reasons; *r; r++)
		if (strstr(err.message, *r))
			return;
	fail_msg("unexpected reason: %s", err.message);
}

static void test_live_failover(void **state)
{
	static const char *const any[] = { "no mem-loads event", "exposes no hardware PMU", "perf_event_paranoid is",
					   NULL };
	static const char *const open_fail[] = { "exposes no hardware PMU", "perf_event_paranoid is", NULL };
	nk_machine *m = NULL;
	nk_error err = { 0 };
	char *root;

	/* A host with a core PMU may refuse for other reasons (a raw Intel event on AMD, the mlock limit):
	 * there any reason will do.  On a host without one (this machine, its guests) the reasons are exact. */
	static const char *const whatever[] = { "", NULL };
	int host_pmu = access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
		       access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;

	if (nk_machine_load_live(&m, &err))
		fail_msg("%s", err.message);
	/* the live system: on this host (no PMU) discovery or perf_event_open fails */
	expect_failover(NULL, m, host_pmu ? whatever : any);

	/* an Intel tree on this host's kernel: perf_event_open itself fails (ENOENT without a PMU) */
	root = tree();
	intel_pmu(root, "cpu", "4\n", 1, 1, NULL);
	put(root, "proc/sys/kernel/perf_event_paranoid", "2\n");
	expect_failover(root, m, host_pmu ? whatever : open_fail);
	rm_tree(root);

	/* an IBS PMU type no kernel has: ENOENT (or the paranoia message when that comes first) everywhere */
	root = tree();
	amd_pmu(root, "999999\n");
	put(root, "proc/sys/kernel/perf_event_paranoid", "3\n");
	expect_failover(root, m, open_fail);
	rm_tree(root);

	/* the messages of the errors this host cannot produce */
	root = tree();
	put(root, "proc/sys/kernel/perf_event_paranoid", "3\n");
	assert_int_equal(nk__hw_open_error(root, NK__HW_EV_LOAD, 0, EACCES, &err), NK_ENOSYS);
	assert_string_equal(err.message, "no precise memory sampling here: perf_event_open(mem-loads) failed: "
					 "Permission denied: perf_event_paranoid is 3; "
					 "run as root or set it to 1 or lower");
	assert_int_equal(nk__hw_open_error("/nonexistent", NK__HW_EV_IBS, 0, EPERM, &err), NK_ENOSYS);
	assert_non_null(strstr(err.message, "perf_event_open(ibs_op) failed: Operation not permitted: "
					    "perf_event_paranoid is unknown;"));
	put(root, "proc/sys/kernel/perf_event_paranoid", "-1\n");
	assert_int_equal(nk__hw_open_error(root, NK__HW_EV_LOAD, 0, EPERM, &err), NK_ENOSYS);
	assert_non_null(strstr(err.message, "failed: Operation not permitted although perf_event_paranoid is -1 (a "
					    "seccomp filter or security module"));
	assert_int_equal(nk__hw_open_error(root, NK__HW_EV_STORE, 5, EOPNOTSUPP, &err), NK_ENOSYS);
	assert_non_null(strstr(err.message, "perf_event_open(mem-stores) failed: Operation not supported (this "
					    "machine or VM exposes no hardware PMU)"));
	assert_int_equal(nk__hw_open_error(root, NK__HW_EV_LOAD, 7, EMFILE, &err), NK_ENOSYS);
	assert_non_null(strstr(err.message, "on cpu 7 failed: Too many open files (one event per cpu"));
	assert_int_equal(nk__hw_open_error(root, NK__HW_EV_LOAD, 0, EINVAL, &err), NK_ENOSYS);
	assert_non_null(strstr(err.message, "refused the event's settings"));
	assert_int_equal(nk__hw_open_error(root, NK__HW_EV_LOAD, 2, EBUSY, &err), NK_ENOSYS);
	assert_non_null(strstr(err.message, "perf_event_open(mem-loads) on cpu 2 failed: Device or resource busy"));
	rm_tree(root);

	struct nk__hw *h = NULL;
	assert_int_equal(nk__hw_open(0, m, 0, &h, &err), NK_EINVAL);
	assert_int_equal(nk__hw_open(getpid(), NULL, 0, &h, &err), NK_EINVAL);
	assert_int_equal(nk__hw_open(getpid(), m, -1, &h, &err), NK_EINVAL);
	assert_null(h);
	nk__hw_close(NULL);
	nk__hw_samples_free(NULL);
	nk_machine_free(m);
}

/* ------------------------------------------------------------ data source */

#define DS(lvl_, op_, snoop_, tlb_)                                                                                   \
	(PERF_MEM_S(LVL, lvl_) | PERF_MEM_S(OP, op_) | PERF_MEM_S(SNOOP, snoop_) | PERF_MEM_S(TLB, tlb_))

static void test_data_src(void **state)
{
	const struct {
		uint64_t v;
		int src;
		const char *what;
	} cases[] = {
		{ DS(L1 | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_L1, "L1 hit" },
		{ DS(LFB | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_LFB, "LFB hit" },
		{ DS(L2 | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_L2, "L2 hit" },
		{ DS(L3 | PERF_MEM_LVL_HIT, LOAD, HIT, HIT), NK__SRC_L3, "L3 hit" },
		{ DS(L3 | PERF_MEM_LVL_HIT, LOAD, HITM, HIT), NK__SRC_L3, "L3 hit, another core's modified line" },
		{ DS(LOC_RAM | PERF_MEM_LVL_HIT, LOAD, MISS, HIT), NK__SRC_LOCAL_DRAM, "local DRAM" },
		{ DS(REM_RAM1 | PERF_MEM_LVL_HIT, LOAD, HIT, HIT), NK__SRC_REMOTE_DRAM, "remote DRAM 1 hop" },
		{ DS(REM_RAM2 | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_REMOTE_DRAM, "remote DRAM 2 hops" },
		{ DS(REM_CCE1 | PERF_MEM_LVL_HIT, LOAD, HITM, HIT), NK__SRC_REMOTE_CACHE, "remote cache HITM" },
		{ DS(REM_CCE2 | PERF_MEM_LVL_HIT, LOAD, HIT, HIT), NK__SRC_REMOTE_CACHE, "remote cache hit" },
		{ DS(REM_RAM1 | PERF_MEM_LVL_HIT, LOAD, HITM, HIT), NK__SRC_REMOTE_CACHE, "remote, HITM (snoop)" },
		{ DS(IO | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_IO, "I/O" },
		{ DS(UNC | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_UNCACHED, "uncached" },
		{ DS(L1 | PERF_MEM_LVL_MISS, STORE, NA, NA), NK__SRC_UNKNOWN, "store missing L1" },
		{ DS(NA, NA, NA, NA), NK__SRC_UNKNOWN, "nothing known" },
		{ 0, NK__SRC_UNKNOWN, "zero" },
		/* the numbered level (newer Intel kernels, AMD through the kernel's IBS decoding) */
		{ PERF_MEM_S(LVLNUM, RAM) | PERF_MEM_S(LVL, HIT), NK__SRC_LOCAL_DRAM, "lvl_num RAM" },
		{ PERF_MEM_S(LVLNUM, RAM) | PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(HOPS, 2), NK__SRC_REMOTE_DRAM,
		  "lvl_num RAM remote" },
		{ PERF_MEM_S(LVLNUM, ANY_CACHE) | PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(SNOOP, HITM),
		  NK__SRC_REMOTE_CACHE, "lvl_num any cache, remote, HITM" },
		{ PERF_MEM_S(LVLNUM, ANY_CACHE) | PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(HOPS, 0), NK__SRC_L3,
		  "another core of the same node (hops 0)" },
		{ PERF_MEM_S(LVLNUM, PMEM) | PERF_MEM_S(LVL, HIT), NK__SRC_PMEM, "PMEM" },
		{ PERF_MEM_S(LVLNUM, CXL) | PERF_MEM_S(REMOTE, REMOTE), NK__SRC_PMEM, "CXL" },
		{ PERF_MEM_S(LVLNUM, L1) | DS(L1 | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_L1, "lvl_num L1" },
		{ PERF_MEM_S(LVLNUM, L2), NK__SRC_L2, "lvl_num L2" },
		{ PERF_MEM_S(LVLNUM, L3) | PERF_MEM_S(LVL, L3), NK__SRC_L3, "lvl_num L3" },
		{ PERF_MEM_S(LVLNUM, LFB), NK__SRC_LFB, "lvl_num LFB" },
		{ PERF_MEM_S(LVLNUM, IO), NK__SRC_IO, "lvl_num IO" },
		{ PERF_MEM_S(LVLNUM, NA) | DS(LOC_RAM | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), NK__SRC_LOCAL_DRAM,
		  "lvl_num NA: legacy bits" },
		/* entries of the kernel's Intel tables (arch/x86/events/intel/ds.c), both fields set */
		{ DS(MISS, LOAD, NA, NA) | PERF_MEM_S(LVLNUM, L3), NK__SRC_UNKNOWN, "0x00: unknown L3 miss" },
		{ DS(L3 | PERF_MEM_LVL_HIT, LOAD, HITM, NA) | PERF_MEM_S(LVLNUM, L3), NK__SRC_L3, "0x07: L3 hit HITM" },
		{ DS(REM_CCE1 | PERF_MEM_LVL_HIT, LOAD, HITM, NA) | PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(LVLNUM, L3),
		  NK__SRC_REMOTE_CACHE, "0x09: L3 miss, remote snoop HITM" },
		{ DS(LOC_RAM | PERF_MEM_LVL_HIT, LOAD, HIT, NA) | PERF_MEM_S(LVLNUM, RAM), NK__SRC_LOCAL_DRAM,
		  "0x0a: L3 miss, local DRAM shared" },
		{ DS(REM_RAM1 | PERF_MEM_LVL_HIT, LOAD, HIT, NA) | PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(LVLNUM, L3),
		  NK__SRC_REMOTE_DRAM, "0x0b (old): remote DRAM, shared, LEVEL(L3)" },
		{ PERF_MEM_S(OP, LOAD) | PERF_MEM_S(LVL, HIT) | PERF_MEM_S(LVLNUM, RAM) | PERF_MEM_S(REMOTE, REMOTE),
		  NK__SRC_REMOTE_DRAM, "0x0b (Skylake server): LEVEL(RAM) | REM" },
		{ PERF_MEM_S(OP, LOAD) | PERF_MEM_S(LVL, HIT) | PERF_MEM_S(LVLNUM, ANY_CACHE) |
			  PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(SNOOPX, FWD),
		  NK__SRC_REMOTE_CACHE, "0x0c (Skylake server): remote cache forward" },
		{ PERF_MEM_S(OP, LOAD) | PERF_MEM_S(LVL, HIT) | PERF_MEM_S(LVLNUM, PMEM), NK__SRC_PMEM,
		  "0x08 (Skylake server with PMEM)" },
		{ DS(IO | PERF_MEM_LVL_HIT, LOAD, NONE, NA) | PERF_MEM_S(LVLNUM, NA), NK__SRC_IO, "0x0e: I/O" },
		{ DS(UNC | PERF_MEM_LVL_HIT, LOAD, NONE, NA) | PERF_MEM_S(LVLNUM, NA), NK__SRC_UNCACHED, "0x0f" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		if (nk__perf_data_src_source(cases[i].v) != cases[i].src)
			fail_msg("%s: source %d, expected %d", cases[i].what, nk__perf_data_src_source(cases[i].v),
				 cases[i].src);

	struct nk__perf_data_src d;
	uint64_t v = DS(REM_CCE1 | PERF_MEM_LVL_HIT, LOAD, HITM, MISS | PERF_MEM_TLB_L2) | PERF_MEM_S(LOCK, LOCKED) |
		     PERF_MEM_S(LVLNUM, ANY_CACHE) | PERF_MEM_S(REMOTE, REMOTE) | PERF_MEM_S(SNOOPX, FWD) |
		     PERF_MEM_S(BLK, ADDR) | PERF_MEM_S(HOPS, 3);
	nk__perf_data_src_split(v, &d);
	assert_int_equal(d.op, PERF_MEM_OP_LOAD);
	assert_int_equal(d.lvl, PERF_MEM_LVL_REM_CCE1 | PERF_MEM_LVL_HIT);
	assert_int_equal(d.snoop, PERF_MEM_SNOOP_HITM);
	assert_int_equal(d.lock, PERF_MEM_LOCK_LOCKED);
	assert_int_equal(d.dtlb, PERF_MEM_TLB_MISS | PERF_MEM_TLB_L2);
	assert_int_equal(d.lvl_num, PERF_MEM_LVLNUM_ANY_CACHE);
	assert_int_equal(d.remote, 1);
	assert_int_equal(d.snoopx, PERF_MEM_SNOOPX_FWD);
	assert_int_equal(d.blk, PERF_MEM_BLK_ADDR);
	assert_int_equal(d.hops, PERF_MEM_HOPS_3);
	assert_int_equal(nk__perf_data_src_source(v), NK__SRC_REMOTE_CACHE);

	assert_int_equal(nk__perf_data_src_access(DS(L1 | PERF_MEM_LVL_HIT, LOAD, NONE, HIT), 0), NK__ACC_READ);
	assert_int_equal(nk__perf_data_src_access(DS(L1 | PERF_MEM_LVL_HIT, STORE, NONE, HIT), 0), NK__ACC_WRITE);
	assert_int_equal(nk__perf_data_src_access(DS(NA, NA, NA, NA), NK__ACC_WRITE), NK__ACC_WRITE);
	assert_true(nk__perf_data_src_tlb_miss(DS(L1, LOAD, NONE, MISS | PERF_MEM_TLB_WK)));
	assert_false(nk__perf_data_src_tlb_miss(DS(L1, LOAD, NONE, HIT | PERF_MEM_TLB_L1)));
}

/* ------------------------------------------------------------ AMD IBS */

struct ibs_regs {
	uint32_t caps;
	uint64_t ctl, rip, data, data2, data3, lin, phys;
};

/*
 * The raw payload as perf_ibs_handle_irq writes it: caps, then the MSRs from
 * IBS_OP_CTL, then 8 bytes more (the kernel's size counts caps as a u64).
 */
static size_t ibs_raw(uint8_t *out, const struct ibs_regs *r)
{
	const uint64_t regs[] = { r->ctl, r->rip, r->data, r->data2, r->data3, r->lin, r->phys };
	memcpy(out, &r->caps, 4);
	memcpy(out + 4, regs, sizeof regs);
	memset(out + 4 + sizeof regs, 0, 8);
	return 4 + sizeof regs + 8;
}

#define D3_LD (1ull << 0)
#define D3_ST (1ull << 1)
#define D3_L2TLB_MISS (1ull << 3)
#define D3_DC_MISS (1ull << 7)
#define D3_UC (1ull << 14)
#define D3_LIN_VALID (1ull << 17)
#define D3_L2_MISS (1ull << 20)
#define D3_LAT(n) ((uint64_t)(n) << 32)

static int ibs_one(const struct ibs_regs *r, struct nk__nkp_sample *s)
{
	uint8_t raw[128];
	size_t n = ibs_raw(raw, r);
	memset(s, 0, sizeof *s);
	return nk__perf_ibs_decode(raw, n, s);
}

static void test_ibs(void **state)
{
	struct nk__nkp_sample s;
	struct ibs_regs r = { .caps = 0x3ff, .rip = 0x401234, .lin = 0x7f0000001000 };

	/* Zen 3: a load that missed the cache, served by remote DRAM, 412 cycles, TLB miss */
	r.data2 = 3 | 1u << 4;
	r.data3 = D3_LD | D3_DC_MISS | D3_LIN_VALID | D3_L2TLB_MISS | D3_L2_MISS | D3_LAT(412);
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_true(s.addr == 0x7f0000001000 && s.ip == 0x401234);
	assert_int_equal(s.access, NK__ACC_READ);
	assert_int_equal(s.source, NK__SRC_REMOTE_DRAM);
	assert_int_equal(s.latency, 412);
	assert_int_equal(s.flags, NK__SF_TLB);
	/* local DRAM, local cache, remote cache, I/O */
	r.data2 = 3;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_LOCAL_DRAM);
	r.data2 = 2;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_L3);
	r.data2 = 4;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_REMOTE_CACHE);
	r.data2 = 7;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_IO);
	r.data2 = 0;
	r.data3 |= D3_UC;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_UNCACHED);
	/* an L1 hit: no latency, RIP invalid */
	r.data3 = D3_LD | D3_LIN_VALID | D3_LAT(99);
	r.data = 1ull << 38;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_L1);
	assert_int_equal(s.latency, 0);
	assert_true(s.ip == 0);
	assert_int_equal(s.flags, 0);
	r.data = 0;
	/* stores: OP_DATA2 is for loads only, so a store is L1, L2 or unknown */
	r.data2 = 3 | 1u << 4;
	r.data3 = D3_ST | D3_DC_MISS | D3_LIN_VALID | D3_L2_MISS;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.access, NK__ACC_WRITE);
	assert_int_equal(s.source, NK__SRC_UNKNOWN);
	r.data3 = D3_ST | D3_DC_MISS | D3_LIN_VALID;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_L2);
	/* a load with no data source: L2 when l2_miss is clear; uncached I/O stays I/O */
	r.data2 = 0;
	r.data3 = D3_LD | D3_DC_MISS | D3_LIN_VALID;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_L2);
	r.data2 = 7;
	r.data3 = D3_LD | D3_DC_MISS | D3_LIN_VALID | D3_UC | D3_L2_MISS;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_IO);
	/* uncached wins over dc_miss/l2_miss, which are invalid then */
	r.data2 = 3;
	r.data3 = D3_LD | D3_LIN_VALID | D3_UC;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_UNCACHED);
	/* not a memory op; a memory op without a valid linear address */
	r.data3 = D3_LIN_VALID;
	assert_int_equal(ibs_one(&r, &s), 0);
	r.data3 = D3_LD | D3_DC_MISS;
	assert_int_equal(ibs_one(&r, &s), 0);

	/* Zen 4: extended data source in OP_DATA2 bits 6-7 */
	r.caps = 0xfff;
	r.data3 = D3_LD | D3_DC_MISS | D3_LIN_VALID | D3_L2_MISS | D3_LAT(250);
	r.data2 = 5; /* far CCX */
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_REMOTE_CACHE);
	r.data2 = 1; /* local CCX L3 */
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_L3);
	r.data2 = 0 | 1u << 6; /* 8: extension memory */
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_PMEM);
	r.data2 = 3 | 1u << 4;
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_REMOTE_DRAM);
	r.data2 = 0;
	r.data3 &= ~D3_L2_MISS; /* no source, but the L2 hit */
	assert_int_equal(ibs_one(&r, &s), 1);
	assert_int_equal(s.source, NK__SRC_L2);

	uint8_t raw[128];
	size_t n = ibs_raw(raw, &r);
	assert_int_equal(nk__perf_ibs_decode(raw, NK__IBS_RAW_MIN - 1, &s), NK_EPARSE);
	assert_int_equal(nk__perf_ibs_decode(raw, n, &s), 1);
}

/* ------------------------------------------------------------ ring buffers */

#define RING 4096

struct ring {
	uint8_t data[RING];
	uint64_t head;
};

/* Append a record (header + body, padded to 8 by the caller), wrapping as the kernel does. */
static void ring_put(struct ring *r, uint32_t type, const void *body, size_t len)
{
	uint8_t rec[1024];
	uint16_t misc = 0, size = (uint16_t)(8 + len);
	assert_true(8 + len <= sizeof rec && (len % 8) == 0);
	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &size, 2);
	memcpy(rec + 8, body, len);
	for (size_t i = 0; i < size; i++)
		r->data[(r->head + i) % RING] = rec[i];
	r->head += size;
}

struct body {
	uint8_t b[512];
	size_t n;
};
static void b64(struct body *b, uint64_t v)
{
	memcpy(b->b + b->n, &v, 8);
	b->n += 8;
}
static void b32x2(struct body *b, uint32_t x, uint32_t y)
{
	memcpy(b->b + b->n, &x, 4);
	memcpy(b->b + b->n + 4, &y, 4);
	b->n += 8;
}

#define INTEL_TYPE                                                                                                    \
	(NK__PERF_SAMPLE_IP | NK__PERF_SAMPLE_TID | NK__PERF_SAMPLE_TIME | NK__PERF_SAMPLE_ADDR |                     \
	 NK__PERF_SAMPLE_CPU | NK__PERF_SAMPLE_PERIOD | NK__PERF_SAMPLE_WEIGHT_STRUCT | NK__PERF_SAMPLE_DATA_SRC)
#define IBS_TYPE                                                                                                      \
	(NK__PERF_SAMPLE_IP | NK__PERF_SAMPLE_TID | NK__PERF_SAMPLE_TIME | NK__PERF_SAMPLE_CPU |                      \
	 NK__PERF_SAMPLE_PERIOD | NK__PERF_SAMPLE_RAW)

static void intel_sample(struct ring *r, uint64_t ip, uint32_t pid, uint32_t tid, uint64_t time, uint64_t addr,
			 uint32_t cpu, uint64_t period, uint32_t lat, uint64_t ds)
{
	struct body b = { .n = 0 };
	b64(&b, ip);
	b32x2(&b, pid, tid);
	b64(&b, time);
	b64(&b, addr);
	b32x2(&b, cpu, 0);
	b64(&b, period);
	b64(&b, (uint64_t)lat | (uint64_t)17 << 32); /* var1_dw latency, var2_w instruction latency */
	b64(&b, ds);
	ring_put(r, NK__PERF_RECORD_SAMPLE, b.b, b.n);
}

static void ibs_sample(struct ring *r, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu,
		       const struct ibs_regs *regs)
{
	struct body b = { .n = 0 };
	uint8_t raw[128];
	uint32_t rawlen = (uint32_t)ibs_raw(raw, regs);
	b64(&b, regs->rip);
	b32x2(&b, pid, tid);
	b64(&b, time);
	b32x2(&b, cpu, 0);
	b64(&b, 0x1000);
	memcpy(b.b + b.n, &rawlen, 4);
	memcpy(b.b + b.n + 4, raw, rawlen);
	b.n += 4 + rawlen;
	assert_int_equal(b.n % 8, 0);
	ring_put(r, NK__PERF_RECORD_SAMPLE, b.b, b.n);
}

struct got {
	struct nk__nkp_sample s[64];
	uint32_t pid[64];
	size_t n;
	size_t fail_at; /* emit returns NK_ENOMEM for this sample number (0: never) */
};

static int collect(void *ctx, const struct nk__nkp_sample *s, uint32_t pid)
{
	struct got *g = ctx;
	if (g->fail_at && g->n + 1 == g->fail_at)
		return NK_ENOMEM;
	assert_true(g->n < 64);
	g->s[g->n] = *s;
	g->pid[g->n++] = pid;
	return 0;
}

static void check_intel(const struct nk__nkp_sample *s, uint64_t ip, uint32_t tid, uint64_t time, uint64_t addr,
			int cpu, uint32_t weight, uint32_t lat, int access, int source, int flags)
{
	assert_true(s->ip == ip);
	assert_int_equal(s->tid, tid);
	assert_true(s->time_ns == time);
	assert_true(s->addr == addr);
	assert_int_equal(s->cpu, cpu);
	assert_int_equal(s->cpu_node, -1);
	assert_int_equal(s->page_node, -1);
	assert_int_equal(s->weight, weight);
	assert_int_equal(s->latency, lat);
	assert_int_equal(s->access, access);
	assert_int_equal(s->source, source);
	assert_int_equal(s->sampler, NK__SAMPLER_HW);
	assert_int_equal(s->flags, flags);
	assert_int_equal(s->phase, 0);
}

static void test_ring_intel(void **state)
{
	static struct ring r;
	struct nk__perf_layout lay = { INTEL_TYPE, NK__PERF_PEBS_LOAD };
	struct nk__perf_stats st = { 0 };
	struct got g = { .n = 0 };
	uint64_t tail;
	const uint64_t remote = DS(REM_RAM1 | PERF_MEM_LVL_HIT, LOAD, HIT, HIT);
	const uint64_t store = DS(L1 | PERF_MEM_LVL_HIT, STORE, NA, MISS | PERF_MEM_TLB_WK);

	/* start near the end of the area, after the kernel has gone round it three times */
	memset(r.data, 0xa5, sizeof r.data);
	r.head = 3 * RING - 40;
	tail = r.head;
	intel_sample(&r, 0x401000, 100, 101, 5000000001ull, 0x7f00deadbee8, 3, 20011, 412, remote); /* wraps */
	uint64_t lost[2] = { 42, 7 }; /* id, lost */
	ring_put(&r, NK__PERF_RECORD_LOST, lost, sizeof lost);
	uint64_t unknown[2] = { 1, 2 };
	ring_put(&r, 77, unknown, sizeof unknown);
	uint64_t thr[3] = { 1, 2, 3 };
	ring_put(&r, NK__PERF_RECORD_THROTTLE, thr, sizeof thr);
	ring_put(&r, NK__PERF_RECORD_UNTHROTTLE, thr, sizeof thr);
	intel_sample(&r, 0x402000, 100, 102, 5000000002ull, 0x601040, 1, 20011, 0, store);
	uint32_t ex[6] = { 100, 1, 102, 102, 0, 0 };
	ring_put(&r, NK__PERF_RECORD_EXIT, ex, sizeof ex);
	intel_sample(&r, 0x403000, 100, 101, 5000000003ull, 0, 0, 1, 30, remote); /* no address: dropped */

	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), 0);
	assert_true(tail == r.head);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.pid[0], 100);
	check_intel(&g.s[0], 0x401000, 101, 5000000001ull, 0x7f00deadbee8, 3, 20011, 412, NK__ACC_READ,
		    NK__SRC_REMOTE_DRAM, 0);
	check_intel(&g.s[1], 0x402000, 102, 5000000002ull, 0x601040, 1, 20011, 0, NK__ACC_WRITE, NK__SRC_L1,
		    NK__SF_TLB);
	assert_true(st.records == 8 && st.samples == 2 && st.dropped == 1 && st.lost == 7 && st.throttled == 1);
	assert_true(st.exits == 1 && st.skipped == 2 && st.corrupt == 0);

	/* nothing new: nothing happens */
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), 0);
	assert_int_equal(g.n, 2);

	/* WEIGHT (not the struct): the whole u64 is the latency; a store event without data_src says WRITE */
	struct nk__perf_layout lay2 = { (INTEL_TYPE & ~NK__PERF_SAMPLE_WEIGHT_STRUCT & ~NK__PERF_SAMPLE_DATA_SRC) |
					NK__PERF_SAMPLE_WEIGHT | NK__PERF_SAMPLE_IDENTIFIER,
					NK__PERF_PEBS_STORE };
	struct body b = { .n = 0 };
	b64(&b, 9); /* identifier */
	b64(&b, 0x404000);
	b32x2(&b, 200, 201);
	b64(&b, 77);
	b64(&b, 0x5000);
	b32x2(&b, 2, 0);
	b64(&b, 1ull << 40); /* a period beyond u32: clamped */
	b64(&b, 1234);
	ring_put(&r, NK__PERF_RECORD_SAMPLE, b.b, b.n);
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay2, collect, &g, &st), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.pid[2], 200);
	check_intel(&g.s[2], 0x404000, 201, 77, 0x5000, 2, UINT32_MAX, 1234, NK__ACC_WRITE, NK__SRC_UNKNOWN, 0);

	/* the consumer runs out of memory: the record stays for the next call */
	g.fail_at = 4;
	intel_sample(&r, 0x405000, 100, 101, 6, 0x6000, 0, 10, 5, remote);
	uint64_t before = tail;
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), NK_ENOMEM);
	assert_true(tail == before);
	g.fail_at = 0;
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), 0);
	assert_int_equal(g.n, 4);
	assert_true(g.s[3].addr == 0x6000);
}

static void test_ring_ibs(void **state)
{
	static struct ring r;
	struct nk__perf_layout lay = { IBS_TYPE, NK__PERF_IBS_OP };
	struct nk__perf_stats st = { 0 };
	struct got g = { .n = 0 };
	struct ibs_regs regs = { .caps = 0x3ff, .rip = 0x401abc, .lin = 0x7fff00001230 };
	uint64_t tail;

	r.head = 5 * RING - 64;
	tail = r.head;
	regs.data2 = 3 | 1u << 4;
	regs.data3 = D3_LD | D3_DC_MISS | D3_LIN_VALID | D3_LAT(380);
	ibs_sample(&r, 300, 301, 999, 5, &regs); /* wraps */
	regs.data3 = 0; /* a branch: no memory access */
	ibs_sample(&r, 300, 301, 1000, 5, &regs);
	regs.data3 = D3_ST | D3_LIN_VALID | D3_L2TLB_MISS;
	regs.lin = 0x601000;
	ibs_sample(&r, 300, 302, 1001, 6, &regs);
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), 0);
	assert_int_equal(g.n, 2);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(g.pid[0], 300);
	check_intel(&g.s[0], 0x401abc, 301, 999, 0x7fff00001230, 5, 0x1000, 380, NK__ACC_READ, NK__SRC_REMOTE_DRAM, 0);
	check_intel(&g.s[1], 0x401abc, 302, 1001, 0x601000, 6, 0x1000, 0, NK__ACC_WRITE, NK__SRC_L1, NK__SF_TLB);

	/* IBS raw data too short for what the decoder reads: the buffer is corrupt */
	struct body b = { .n = 0 };
	uint32_t rawlen = 12;
	b64(&b, 1);
	b32x2(&b, 1, 1);
	b64(&b, 1);
	b32x2(&b, 0, 0);
	b64(&b, 16);
	memcpy(b.b + b.n, &rawlen, 4);
	memset(b.b + b.n + 4, 0, 12);
	b.n += 16;
	ring_put(&r, NK__PERF_RECORD_SAMPLE, b.b, b.n);
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), NK_EPARSE);
	assert_true(tail == r.head);
	assert_int_equal(st.corrupt, 1);
}

static void put_raw_header(struct ring *r, uint32_t type, uint16_t size)
{
	uint16_t misc = 0;
	uint8_t h[8];
	memcpy(h, &type, 4);
	memcpy(h + 4, &misc, 2);
	memcpy(h + 6, &size, 2);
	for (int i = 0; i < 8; i++)
		r->data[(r->head + (uint64_t)i) % RING] = h[i];
}

static void test_ring_corrupt(void **state)
{
	static struct ring r;
	struct nk__perf_layout lay = { INTEL_TYPE, NK__PERF_PEBS_LOAD };
	const uint64_t remote = DS(REM_RAM1 | PERF_MEM_LVL_HIT, LOAD, HIT, HIT);
	const uint16_t sizes[] = { 0, 4, 12, 8192, 0xfff8 };

	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		struct nk__perf_stats st = { 0 };
		struct got g = { .n = 0 };
		uint64_t tail;

		memset(&r, 0, sizeof r);
		r.head = 2 * RING - 24;
		tail = r.head;
		intel_sample(&r, 1, 2, 3, 4, 0x1000, 0, 1, 1, remote);
		put_raw_header(&r, NK__PERF_RECORD_SAMPLE, sizes[i]);
		r.head += 64; /* the kernel says more was written than the corrupt record allows */
		assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), NK_EPARSE);
		assert_true(tail == r.head);
		assert_int_equal(g.n, 1); /* what came before is kept */
		assert_int_equal(st.corrupt, 1);
	}

	/* a record whose body is shorter than its sample_type says */
	struct nk__perf_stats st = { 0 };
	struct got g = { .n = 0 };
	uint64_t tail, body[2] = { 1, 2 };
	memset(&r, 0, sizeof r);
	tail = r.head;
	ring_put(&r, NK__PERF_RECORD_SAMPLE, body, sizeof body);
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), NK_EPARSE);
	/* a LOST record too short to hold its count */
	tail = r.head;
	ring_put(&r, NK__PERF_RECORD_LOST, body, 8);
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &lay, collect, &g, &st), NK_EPARSE);
	/* a head the buffer cannot hold, a tail past head, a head mid-header, a bad area size */
	tail = 0;
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, RING + 8, &lay, collect, &g, &st), NK_EPARSE);
	tail = 100;
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, 50, &lay, collect, &g, &st), NK_EPARSE);
	assert_true(tail == 50);
	memset(&r, 0, sizeof r);
	intel_sample(&r, 1, 2, 3, 4, 0x1000, 0, 1, 1, remote);
	tail = 0;
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, 4, &lay, collect, &g, &st), NK_EPARSE);
	tail = 0;
	assert_int_equal(nk__perf_ring_decode(r.data, 3000, &tail, r.head, &lay, collect, &g, &st), NK_EPARSE);
	/* a layout with bits the decoder cannot walk */
	struct nk__perf_layout bad = { INTEL_TYPE | NK__PERF_SAMPLE_READ, NK__PERF_PEBS_LOAD };
	tail = 0;
	assert_int_equal(nk__perf_ring_decode(r.data, RING, &tail, r.head, &bad, collect, &g, &st), NK_EPARSE);
	assert_int_equal(st.corrupt, 7);
}

/* ------------------------------------------------------------ drain */

/* A fake mapping: perf_event_mmap_page then the data area, as the kernel lays it out. */
struct fake_map {
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t len, size;
};

static void fake_map(struct fake_map *f, int new_kernel)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = NULL;
	f->size = (size_t)page;
	f->len = 2 * (size_t)page;
	assert_int_equal(posix_memalign(&p, (size_t)page, f->len), 0);
	memset(p, 0, f->len);
	f->meta = p;
	f->data = (uint8_t *)p + page;
	if (new_kernel) {
		f->meta->data_offset = (uint64_t)page;
		f->meta->data_size = (uint64_t)page;
	}
}

/* Append one Intel sample record at data_head, wrapping, and publish it. */
static void fake_sample(struct fake_map *f, uint32_t tid, int cpu, uint64_t addr)
{
	uint8_t body[72];
	uint64_t v[9] = { 0x401000, (uint64_t)tid << 32 | 7, 1000 + tid, addr, (uint64_t)cpu, 100, 300,
			  DS(REM_RAM1 | PERF_MEM_LVL_HIT, LOAD, HIT, HIT) };
	uint32_t type = NK__PERF_RECORD_SAMPLE;
	uint16_t misc = 0, size = 8 + 64;
	uint8_t rec[72];
	memcpy(body, v, 64);
	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &size, 2);
	memcpy(rec + 8, body, 64);
	for (size_t i = 0; i < size; i++)
		f->data[(f->meta->data_head + i) % f->size] = rec[i];
	f->meta->data_head += size;
}

static void test_drain(void **state)
{
	nk_machine *m = nk_test_synth("nodes=2 cores=2");
	struct fake_map a, b;
	struct nk__perf_layout lay[2] = { { INTEL_TYPE, NK__PERF_PEBS_LOAD }, { INTEL_TYPE, NK__PERF_PEBS_STORE } };
	struct nk__hw_samples out = { 0 };
	struct nk__perf_stats st;
	struct nk__hw *h = NULL;
	nk_error err = { 0 };
	nk_cpu_info ci;
	int cpu = nk_machine_cpu_id(m, nk_machine_num_cpus(m) - 1);

	assert_int_equal(nk_machine_cpu_info(m, cpu, &ci), 0);
	fake_map(&a, 1);
	fake_map(&b, 0);
	/* a: the kernel went round once; the first record wraps */
	a.meta->data_head = a.meta->data_tail = a.size - 24;
	fake_sample(&a, 11, cpu, 0x1000);
	uint8_t lost[24] = { 0 };
	uint32_t lt = NK__PERF_RECORD_LOST;
	uint16_t ls = 24;
	uint64_t nlost = 5;
	memcpy(lost, &lt, 4);
	memcpy(lost + 6, &ls, 2);
	memcpy(lost + 16, &nlost, 8);
	for (size_t i = 0; i < 24; i++)
		a.data[(a.meta->data_head + i) % a.size] = lost[i];
	a.meta->data_head += 24;
	/* b: one sample, then a record of size 0 */
	fake_sample(&b, 12, 0, 0x2000);
	b.meta->data_head += 16;

	void *maps[2] = { a.meta, b.meta };
	size_t lens[2] = { a.len, b.len };
	assert_int_equal(nk__hw_from_rings(maps, lens, lay, 2, m, &h), 0);
	assert_int_equal(nk__hw_drain(h, &out, &err), 0);
	assert_int_equal(out.n, 2);
	assert_true(out.s[0].addr == 0x1000 && out.s[0].tid == 11 && out.pid[0] == 7);
	assert_int_equal(out.s[0].cpu, cpu);
	assert_int_equal(out.s[0].cpu_node, ci.node);
	assert_int_equal(out.s[0].page_node, -1);
	assert_int_equal(out.s[0].source, NK__SRC_REMOTE_DRAM);
	assert_true(out.s[1].addr == 0x2000 && out.s[1].tid == 12);
	assert_int_equal(out.lost, 5);
	assert_true(a.meta->data_tail == a.meta->data_head);
	assert_true(b.meta->data_tail == b.meta->data_head);
	nk__hw_stats(h, &st);
	assert_true(st.corrupt == 1 && st.samples == 2 && st.lost == 5);

	/* b is abandoned; a goes on, across many drains and well past the first 1024 samples */
	fake_sample(&b, 13, 0, 0x3000);
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < 40; i++)
			fake_sample(&a, 100 + (uint32_t)i, 0, 0x10000 + (uint64_t)(round * 40 + i));
		assert_int_equal(nk__hw_drain(h, &out, &err), 0);
		assert_true(a.meta->data_tail == a.meta->data_head);
	}
	assert_int_equal(out.n, 2 + 1600);
	for (size_t i = 2; i < out.n; i++)
		if (out.s[i].addr != 0x10000 + i - 2 || out.pid[i] != 7)
			fail_msg("sample %zu: addr %llx", i, (unsigned long long)out.s[i].addr);
	assert_true(b.meta->data_tail != b.meta->data_head);
	assert_int_equal(out.lost, 5);
	assert_string_equal(nk__hw_describe(h), "2 ring buffers");
	nk__hw_close(h);
	nk__hw_samples_free(&out);
	assert_null(out.s);
	free(a.meta);
	free(b.meta);
	nk_machine_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),     cmocka_unit_test(test_event_encode),
		cmocka_unit_test(test_discover_intel),   cmocka_unit_test(test_discover_hybrid),
		cmocka_unit_test(test_discover_amd),     cmocka_unit_test(test_discover_neither),
		cmocka_unit_test(test_live_failover),    cmocka_unit_test(test_data_src),
		cmocka_unit_test(test_ibs),              cmocka_unit_test(test_ring_intel),
		cmocka_unit_test(test_ring_ibs),         cmocka_unit_test(test_ring_corrupt),
		cmocka_unit_test(test_drain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
