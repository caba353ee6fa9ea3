/* SPDX-License-Identifier: BSD-3-Clause
 * The sysfs/procfs reader on fuzzed trees.  The input is split at '\x01'
 * bytes into the contents of the files the reader parses (list files, hex
 * masks, meminfo, distance rows, /proc/self/status, mounts and cgroup
 * files); they are written into a scratch tree that is loaded with
 * nk_machine_load_fsroot.  A part that is the one byte '\x02' leaves its file
 * absent, as do the files after the last part, so the fallbacks of older
 * layouts are reached too (no cpu/online, no nodeN/cpulist...).  Any machine
 * that loads must serialise and reload, its notes included.  The tree is removed at exit (libFuzzer
 * and the replay driver both exit through exit()), so that neither leaves a folder in /tmp per run.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "numakit.h"

static const char *const files[] = {
	"sys/devices/system/cpu/online",
	"sys/devices/system/node/online",
	"sys/devices/system/node/possible",
	"sys/devices/system/node/node0/cpulist",
	"sys/devices/system/node/node0/distance",
	"sys/devices/system/node/node0/meminfo",
	"sys/devices/system/node/node1/cpumap",
	"sys/devices/system/node/node1/distance",
	"sys/devices/system/node/node1/meminfo",
	"sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
	"sys/devices/system/cpu/cpu0/topology/physical_package_id",
	"sys/devices/system/cpu/cpu0/cache/index0/level",
	"sys/devices/system/cpu/cpu0/cache/index0/type",
	"sys/devices/system/cpu/cpu0/cache/index0/size",
	"sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list",
	"sys/devices/system/cpu/cpu1/cache/index0/shared_cpu_map",
	"sys/devices/system/cpu/cpu1/cache/index0/level",
	"sys/kernel/mm/transparent_hugepage/enabled",
	"sys/kernel/mm/mempolicy/weighted_interleave/node0",
	"proc/sys/kernel/numa_balancing",
	"proc/self/status",
	"proc/self/cpuset",
	"proc/mounts",
	"cg/x/cpuset.cpus.effective",
	"proc/meminfo",
	/* the fallbacks of older layouts (docs/formats.md, "Older sysfs layouts") */
	"sys/devices/system/cpu/present",
	"sys/devices/system/cpu/possible",
	"proc/cpuinfo",
	"sys/devices/system/cpu/cpu1/online",
	"sys/devices/system/node/has_memory",
	"sys/devices/system/cpu/cpu1/topology/thread_siblings",
	"sys/devices/system/cpu/cpu1/node1",
};
#define NFILES (sizeof files / sizeof *files)

static char root[64];

static void mkparents(const char *path)
{
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s", path);
	for (char *p = tmp + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void cleanup(void)
{
	nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	if (!root[0]) {
		snprintf(root, sizeof root, "/tmp/nk-fuzz-fsroot-%ld", (long)getpid());
		mkdir(root, 0755);
		atexit(cleanup);
	}
	size_t start = 0, k = 0;
	for (size_t i = 0; i <= size && k < NFILES; i++) {
		if (i < size && data[i] != 1)
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", root, files[k]);
		mkparents(path);
		FILE *f = i - start == 1 && data[start] == 2 ? (unlink(path), NULL) : fopen(path, "w");
		if (f) {
			fwrite(data + start, 1, i - start, f);
			fclose(f);
		}
		start = i + 1;
		k++;
	}
	for (; k < NFILES; k++) { /* files the input does not reach are absent */
		char path[512];
		snprintf(path, sizeof path, "%s/%s", root, files[k]);
		unlink(path);
	}
	nk_machine *m = NULL;
	nk_error err;
	if (nk_machine_load_fsroot(root, &m, &err) == 0) {
		char *json = NULL;
		if (nk_machine_to_json(m, 0, &json) != 0)
			abort();
		nk_machine *back = NULL;
		if (nk_machine_load_buffer(json, strlen(json), &back, &err) != 0) {
			fprintf(stderr, "reload failed: %s\n", err.message);
			abort();
		}
		if (nk_machine_num_notes(back) != nk_machine_num_notes(m))
			abort();
		for (int i = 0; i < nk_machine_num_notes(m); i++)
			if (strcmp(nk_machine_note(back, i), nk_machine_note(m, i)) || strchr(nk_machine_note(m, i), '\n'))
				abort();
		nk_machine_free(back);
		free(json);
		nk_machine_free(m);
	} else if (!err.message[0] || strchr(err.message, '\n')) {
		fprintf(stderr, "bad message: \"%s\"\n", err.message);
		abort(); /* every failure has one line saying what went wrong */
	}
	return 0;
}
