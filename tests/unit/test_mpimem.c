/* SPDX-License-Identifier: BSD-3-Clause
 * MPI's own memory among file mappings (src/profile/mpimem.c): the segment names of Open MPI, MPICH, UCX
 * and PMIx as /proc/PID/maps shows them in ranks on this project's host (and Open MPI 5's from its source),
 * and names that are not MPI's.
 */
#include "testutil.h"

#include <string.h>

#include "profile/mpimem.h"

static void expect(const char *path, const char *id)
{
	const struct nk__mpi_mem *m = nk__mpi_mapping(path);
	if (!id) {
		if (m)
			fail_msg("%s: classified as %s, expected no MPI memory", path ? path : "(null)", m->id);
		return;
	}
	if (!m)
		fail_msg("%s: not classified, expected %s", path, id);
	if (strcmp(m->id, id))
		fail_msg("%s: classified as %s, expected %s", path, m->id, id);
	assert_true(strncmp(m->name, "MPI", 3) == 0);
}

static void test_mpi_segments(void **state)
{
	(void)state;
	/* Open MPI 4.1.4 (mpirun -np 3 on host "vm"), its shared window, its launcher's PMIx store */
	expect("/dev/shm/vader_segment.vm.0.602a0001.2", "openmpi-vader");
	expect("/tmp/ompi.vm.0/pid.3284/0/vader_segment.vm.1", "openmpi-vader"); /* in the session folder */
	expect("/dev/shm/osc_sm.vm.3e620001.0.4 (deleted)", "openmpi-osc-sm");
	expect("/tmp/ompi.vm.0/pid.3284/pmix_dstor_ds21_3284/smdataseg-1613365249-0", "pmix-dstore");
	expect("/tmp/ompi.vm.0/pid.3284/pmix_dstor_ds21_3284/smseg-1613365249-0", "pmix-dstore");
	expect("/tmp/ompi.vm.0/pid.3284/pmix_dstor_ds12_3284/initial-pmix_shared-segment-0", "pmix-dstore");
	expect("/tmp/ompi.vm.0/pid.3284/pmix_dstor_ds12_3284/dstore_sm.lock", "pmix-dstore");
	/* Open MPI 5 (btl/sm: "%s/sm_segment.%s.%u.%x.%d") */
	expect("/dev/shm/sm_segment.n0.1000.3e620001.0", "openmpi-sm");
	/* MPICH 4.0.2 over UCX 1.13 */
	expect("/dev/shm/mpich_shar_tmpuTqRjm (deleted)", "mpich-shm");
	expect("/dev/shm/ucx_shm_posix_4d49bb6e (deleted)", "ucx-posix");
}

static void test_not_mpi(void **state)
{
	(void)state;
	expect("/SYSV00000000 (deleted)", NULL); /* UCX's sysv transport among others: not MPI's alone */
	expect("/dev/zero (deleted)", NULL);
	expect("/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4", NULL);
	expect("/data/vader_segments/input.bin", NULL);  /* a folder named like a segment: the file decides */
	expect("/data/pmix_dstor_notes", NULL);          /* a file named like PMIx's folder */
	expect("/home/u/run/my_vader_segment.dat", NULL); /* a prefix, not a substring */
	expect("[anon:x]", NULL);
	expect("", NULL);
	expect(NULL, NULL);
}

static void abi(const char *soname, const char *want)
{
	const char *got = nk__mpi_abi_of_library(soname);
	if (want ? !got || strcmp(got, want) : got != NULL)
		fail_msg("%s: %s, expected %s", soname ? soname : "(null)", got ? got : "none", want ? want : "none");
}

/* The DT_NEEDED names of programs built with Debian 12's mpicc/mpif90/mpicxx, Open MPI 4.1.4 and MPICH
 * 4.0.2 (readelf -d), and names that are not MPI's. */
static void test_abi_of_library(void **state)
{
	(void)state;
	abi("libmpi.so.40", "openmpi");
	abi("libmpi_mpifh.so.40", "openmpi");
	abi("libmpi_usempif08.so.40", "openmpi");
	abi("libmpi_cxx.so.40", "openmpi");
	abi("libmpi.so.40.30.4", "openmpi");
	abi("libmpich.so.12", "mpich");
	abi("libmpichfort.so.12", "mpich");
	abi("libmpi.so.12", "mpich"); /* Intel MPI, MVAPICH: the MPICH ABI */
	abi("libmpifort.so.12", "mpich");
	abi("libmpicxx.so.12", "mpich");
	abi("libmpi.so.400", NULL);
	abi("libmpi.so.1", NULL);     /* Open MPI 1.x: an ABI the wrappers are not built for */
	abi("libmpio.so.1", NULL);
	abi("libmpfr.so.6", NULL);
	abi("libm.so.6", NULL);
	abi("libmpi", NULL);
	abi("", NULL);
	abi(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mpi_segments),
		cmocka_unit_test(test_not_mpi),
		cmocka_unit_test(test_abi_of_library),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
