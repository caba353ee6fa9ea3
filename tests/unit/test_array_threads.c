/* SPDX-License-Identifier: BSD-3-Clause
 * NUMA arrays under concurrency (meant for the TSan build, -DNK_SANITIZE=thread,
 * but it checks results in any build): threads allocating, applying,
 * looking up and freeing their own arrays while others do the same, and
 * threads applying policies to one shared array at once.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define THREADS 6
#define ROUNDS 40

static nk_machine *machine;
static nk_policy *policies[2];
static nk_array *shared;
static int failures; /* written under fail_lock */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_failure(void)
{
	pthread_mutex_lock(&fail_lock);
	failures++;
	pthread_mutex_unlock(&fail_lock);
}

static void *own_arrays(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (int r = 0; r < ROUNDS; r++) {
		size_t dims[2] = { 3 + id, 500 + (size_t)r * 7 };
		nk_array *a = NULL;

		if (nk_array_alloc(machine, sizeof(int), 2, dims, 0, &a)) {
			note_failure();
			continue;
		}
		int **x = nk_array_rows(a);
		for (size_t i = 0; i < dims[0]; i++)
			for (size_t j = 0; j < dims[1]; j++)
				x[i][j] = (int)(id * 1000000 + i * 1000 + j);
		if (nk_array_apply(a, policies[r % 2], 0, NULL, NULL))
			note_failure();
		/* lookups of our own array while others register and unregister theirs */
		if (nk_array_from(&x[dims[0] - 1][dims[1] - 1]) != a || nk_array_from(x) != a)
			note_failure();
		for (size_t i = 0; i < dims[0]; i++)
			for (size_t j = 0; j < dims[1]; j++)
				if (x[i][j] != (int)(id * 1000000 + i * 1000 + j))
					note_failure();
		nk_array_stats st;
		if (nk_array_stats_get(a, &st) || st.applications != 1)
			note_failure();
		nk_array_free(a);
	}
	return NULL;
}

static void *shared_array(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	char buf[128];

	for (int r = 0; r < ROUNDS; r++) {
		nk_array_stats st;
		if (nk_array_apply(shared, policies[(r + id) % 2], 0, NULL, NULL))
			note_failure();
		if (nk_array_stats_get(shared, &st) || st.history == 0)
			note_failure();
		if (nk_array_history(shared, st.history - 1, buf, sizeof buf) <= 0)
			note_failure();
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	pthread_t t[2 * THREADS];
	nk_error err = { 0, "" };
	const size_t dims[1] = { 1 << 16 };
	nk_array_stats st;

	assert_int_equal(nk_machine_load_live(&machine, &err), 0);
	assert_int_equal(nk_policy_parse("cyclic", &policies[0], NULL), 0);
	assert_int_equal(nk_policy_parse("bind", &policies[1], NULL), 0);
	assert_int_equal(nk_array_alloc(machine, 8, 1, dims, 0, &shared), 0);
	memset(nk_array_data(shared), 0x5a, dims[0] * 8);
	/* skip on a kernel without NUMA system calls */
	if (nk_array_apply(shared, policies[0], 0, NULL, &err) == NK_ENOSYS)
		skip();
	for (uintptr_t i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_create(&t[i], NULL, own_arrays, (void *)i), 0);
		assert_int_equal(pthread_create(&t[THREADS + i], NULL, shared_array, (void *)i), 0);
	}
	for (int i = 0; i < 2 * THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(failures, 0);
	assert_int_equal(nk_array_stats_get(shared, &st), 0);
	assert_int_equal(st.applications, 1 + THREADS * ROUNDS);
	const unsigned char *d = nk_array_data(shared);
	for (size_t k = 0; k < dims[0] * 8; k++)
		if (d[k] != 0x5a)
			fail_msg("byte %zu changed", k);
	nk_array_free(shared);
	nk_policy_free(policies[0]);
	nk_policy_free(policies[1]);
	nk_machine_free(machine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
