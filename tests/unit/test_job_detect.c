/* SPDX-License-Identifier: BSD-3-Clause
 * Launcher detection (nk_job_detect) on recorded environments of every
 * launcher: tests/data/job/NAME.env, each with the result it must give in
 * its "#!" lines (README.md there).  Every fixture of the folder is run, so a
 * new environment needs no edit here; the list below makes sure none is
 * lost and every launcher is covered.
 */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB_DIR NK_TEST_SRC "/data/job"

static const char *const required[] = {
	"openmpi-4.1", "openmpi-5-prrte", "openmpi-in-sbatch", "mpich-hydra", "intelmpi-hydra", "srun-pmi2",
	"srun-pmix", "pals-pmix", "slurm-srun", "slurm-uneven", "slurm-ntasks-per-node", "none",
	"bad-openmpi-local-rank-ge-size", "bad-openmpi-not-numeric", "bad-openmpi-rank-ge-size",
	"bad-hydra-no-local-size", "bad-pmix-no-local", "bad-slurm-uneven-no-nodeid", "bad-slurm-zero",
	"bad-slurm-missing-local-size",
};

static int launcher_of(const char *w)
{
	static const char *const names[] = { "none", "openmpi", "pmi", "pmix", "slurm" };
	for (int i = 0; i < 5; i++)
		if (!strcmp(w, names[i]))
			return i;
	fail_msg("unknown launcher '%s'", w);
	return -1;
}

static int rc_of(const char *w)
{
	if (!strcmp(w, "ok"))
		return 0;
	if (!strcmp(w, "nodata"))
		return NK_ENODATA;
	if (!strcmp(w, "parse"))
		return NK_EPARSE;
	fail_msg("unknown rc '%s'", w);
	return 1;
}

/* Run one fixture; returns 1 when it was checked. */
static int check_fixture(const char *name)
{
	char path[512], *text, *line, *save = NULL;
	const char *envp[256];
	char problems[8][200];
	char want_id[128] = "", want_var[64] = "";
	int n = 0, np = 0, want_l = -2, want_rank = -2, want_size = -2, want_lr = -2, want_ls = -2, want_rc = 1;
	nk_job_info info;
	int rc;

	snprintf(path, sizeof path, "%s/%s.env", JOB_DIR, name);
	text = nk_test_slurp(path);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char l[32], r[32];
		if (!strncmp(line, "#! expect ", 10)) {
			assert_int_equal(sscanf(line + 10, "launcher=%31s rank=%d size=%d local_rank=%d local_size=%d rc=%31s", l,
						&want_rank, &want_size, &want_lr, &want_ls, r),
					 6);
			want_l = launcher_of(l);
			want_rc = rc_of(r);
		} else if (!strncmp(line, "#! jobid ", 9)) {
			assert_true(sscanf(line + 9, "%127s %63s", want_id, want_var) >= 1);
		} else if (!strncmp(line, "#! problem ", 11)) {
			assert_true(np < 8);
			snprintf(problems[np++], sizeof problems[0], "%s", line + 11);
		} else if (line[0] != '#' && line[0]) {
			assert_true(n < 255);
			envp[n++] = line;
		}
	}
	envp[n] = NULL;
	if (want_l < 0)
		fail_msg("%s: no '#! expect' line", path);
	rc = nk_job_detect(envp, &info);
	if (rc != want_rc || info.launcher != want_l || info.rank != want_rank || info.size != want_size ||
	    info.local_rank != want_lr || info.local_size != want_ls)
		fail_msg("%s: rc %d launcher %d rank %d size %d local %d/%d (problems: %s)", name, rc, info.launcher,
			 info.rank, info.size, info.local_rank, info.local_size, info.problems);
	for (int i = 0; i < np; i++)
		if (!strstr(info.problems, problems[i]))
			fail_msg("%s: problems \"%s\" lack \"%s\"", name, info.problems, problems[i]);
	/* a clean environment says nothing; an inconsistent one always says why */
	if (!np && want_rc == 0 && info.problems[0])
		fail_msg("%s: unexpected problems: %s", name, info.problems);
	if (want_rc == NK_EPARSE)
		assert_true(info.problems[0] != 0);
	if (want_id[0]) {
		char id[NK_JOB_ID_MAX + 1];
		const char *var = NULL;
		int n_id = nk_job_id(envp, info.launcher, id, sizeof id, &var);
		if (!strcmp(want_id, "-")) {
			if (n_id != NK_ENODATA || var)
				fail_msg("%s: job id %d \"%s\" from %s, expected none", name, n_id, n_id > 0 ? id : "", var);
		} else if (n_id != (int)strlen(want_id) || strcmp(id, want_id) || !var || strcmp(var, want_var)) {
			fail_msg("%s: job id %d \"%s\" from %s, expected \"%s\" from %s", name, n_id, n_id > 0 ? id : "",
				 var ? var : "nothing", want_id, want_var);
		}
	}
	free(text);
	return 1;
}

static void test_fixtures(void **state)
{
	DIR *d = opendir(JOB_DIR);
	struct dirent *e;
	int seen = 0;

	(void)state;
	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char name[256];
		if (len < 5 || strcmp(e->d_name + len - 4, ".env"))
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(len - 4), e->d_name);
		seen += check_fixture(name);
	}
	closedir(d);
	for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
		char path[512];
		FILE *f;
		snprintf(path, sizeof path, "%s/%s.env", JOB_DIR, required[i]);
		f = fopen(path, "r");
		if (!f)
			fail_msg("fixture %s is missing", path);
		fclose(f);
	}
	assert_true(seen >= (int)(sizeof required / sizeof *required));
}

static void test_edges(void **state)
{
	nk_job_info info;
	const char *empty[] = { NULL };
	const char *prefix[] = { "OMPI_COMM_WORLD_RANKX=3", "PMI_RANK_=1", NULL };
	const char *blanks[] = { "SLURM_PROCID= 2 ", "SLURM_LOCALID=0", "SLURM_NTASKS_PER_NODE=1", NULL };
	const char *huge[] = { "OMPI_COMM_WORLD_LOCAL_RANK=99999999999999999999", "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL };
	const char *neg[] = { "OMPI_COMM_WORLD_LOCAL_RANK=-1", "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL };
	const char *empty_val[] = { "MPI_LOCALRANKID=", "MPI_LOCALNRANKS=2", NULL };

	(void)state;
	assert_int_equal(nk_job_detect(NULL, &info), NK_EINVAL);
	assert_int_equal(nk_job_detect(empty, NULL), NK_EINVAL);
	assert_int_equal(nk_job_detect(empty, &info), NK_ENODATA);
	assert_int_equal(info.local_size, 1);
	/* names are matched whole */
	assert_int_equal(nk_job_detect(prefix, &info), NK_ENODATA);
	assert_int_equal(nk_job_detect(blanks, &info), 0);
	assert_int_equal(info.rank, 2);
	assert_int_equal(nk_job_detect(huge, &info), NK_EPARSE);
	assert_non_null(strstr(info.problems, "not a number"));
	assert_int_equal(nk_job_detect(neg, &info), NK_EPARSE);
	assert_non_null(strstr(info.problems, "OMPI_COMM_WORLD_LOCAL_RANK=-1"));
	assert_int_equal(nk_job_detect(empty_val, &info), NK_EPARSE);
	assert_int_equal(info.launcher, NK_LAUNCHER_PMI);
	assert_string_equal(nk_launcher_name(NK_LAUNCHER_OPENMPI), "Open MPI");

	/* job ids: the launcher's own variables only, checked values, the older Slurm names, sizes */
	char id[NK_JOB_ID_MAX + 1], small[4];
	const char *var = NULL;
	const char *ompi_both[] = { "PMIX_NAMESPACE=ns", "OMPI_MCA_ess_base_jobid=123", NULL };
	const char *blank_id[] = { "OMPI_MCA_ess_base_jobid=1 2", "PMIX_NAMESPACE=ns", NULL };
	const char *slurm_old[] = { "SLURM_JOBID=77", "SLURM_STEPID=3", NULL };
	const char *slurm_nostep[] = { "SLURM_JOB_ID=77", NULL };
	const char *kvs[] = { "PMI_KVSNAME=kvs_42_0", "SLURM_JOB_ID=77", "SLURM_STEP_ID=0", NULL };
	const char *pmi_slurm[] = { "PMI_RANK=1", "SLURM_JOB_ID=77", "SLURM_STEP_ID=2", NULL };
	assert_int_equal(nk_job_id(ompi_both, NK_LAUNCHER_OPENMPI, id, sizeof id, &var), 3);
	assert_string_equal(id, "123");
	assert_string_equal(var, "OMPI_MCA_ess_base_jobid");
	assert_int_equal(nk_job_id(blank_id, NK_LAUNCHER_OPENMPI, id, sizeof id, &var), 2);
	assert_string_equal(id, "ns");
	assert_int_equal(nk_job_id(slurm_old, NK_LAUNCHER_SLURM, id, sizeof id, &var), 4);
	assert_string_equal(id, "77.3");
	assert_int_equal(nk_job_id(slurm_nostep, NK_LAUNCHER_SLURM, id, sizeof id, &var), 2);
	assert_string_equal(var, "SLURM_JOB_ID");
	assert_int_equal(nk_job_id(kvs, NK_LAUNCHER_PMI, id, sizeof id, NULL), 8);
	assert_string_equal(id, "kvs_42_0");
	assert_int_equal(nk_job_id(pmi_slurm, NK_LAUNCHER_PMI, id, sizeof id, &var), 4);
	assert_string_equal(id, "77.2");
	/* nested launchers: the allocation's id is not Open MPI's nor PMIx's; a failure changes nothing */
	var = NULL;
	strcpy(id, "kept");
	assert_int_equal(nk_job_id(slurm_nostep, NK_LAUNCHER_OPENMPI, id, sizeof id, &var), NK_ENODATA);
	assert_null(var);
	assert_string_equal(id, "kept");
	assert_int_equal(nk_job_id(slurm_nostep, NK_LAUNCHER_PMIX, id, sizeof id, NULL), NK_ENODATA);
	assert_int_equal(nk_job_id(slurm_nostep, NK_LAUNCHER_NONE, id, sizeof id, NULL), NK_ENODATA);
	assert_int_equal(nk_job_id(ompi_both, NK_LAUNCHER_OPENMPI, small, sizeof small, NULL), 3);
	assert_int_equal(nk_job_id(slurm_old, NK_LAUNCHER_SLURM, small, sizeof small, NULL), NK_ERANGE);
	assert_string_equal(small, "123"); /* as it was */
	assert_int_equal(nk_job_id(NULL, NK_LAUNCHER_SLURM, id, sizeof id, NULL), NK_EINVAL);
	assert_int_equal(nk_job_id(slurm_old, 9, id, sizeof id, NULL), NK_EINVAL);
	assert_int_equal(nk_job_id(slurm_old, NK_LAUNCHER_SLURM, id, 0, NULL), NK_EINVAL);
	assert_string_equal(nk_launcher_name(99), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
