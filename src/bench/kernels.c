/* SPDX-License-Identifier: BSD-3-Clause
 * Bandwidth and access-pattern kernels.  They only touch memory; the
 * harness (run.c) times them and turns bytes into MB/s using the bytes per
 * element each kernel declares here.  Bytes are counted as STREAM does (a
 * store is 8 bytes, the write-allocate read is not counted), so figures
 * compare with STREAM's.
 */
#include "bench/bench_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define NK__HAVE_SSE2_BUILD 1
#endif

static double k_read(double *a, const double *b, const double *c, size_t n)
{
	/* Eight accumulators: the loop is bound by loads, not by the add latency. */
	double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;

	for (size_t i = 0; i < n; i += 8) {
		s0 += b[i];
		s1 += b[i + 1];
		s2 += b[i + 2];
		s3 += b[i + 3];
		s4 += b[i + 4];
		s5 += b[i + 5];
		s6 += b[i + 6];
		s7 += b[i + 7];
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

static double k_write(double *a, const double *b, const double *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = 1.0;
	return a[0];
}

static double k_copy(double *restrict a, const double *restrict b, const double *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = b[i];
	return a[0];
}

static double k_triad(double *restrict a, const double *restrict b, const double *restrict c, size_t n)
{
	const double s = 3.0;

	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
	return a[0];
}

#ifdef NK__HAVE_SSE2_BUILD
/* Non-temporal stores bypass the cache: no write-allocate read of the target. */
static double k_write_nt(double *a, const double *b, const double *c, size_t n)
{
	const __m128i v = _mm_castpd_si128(_mm_set1_pd(1.0));

	for (size_t i = 0; i < n; i += 2)
		_mm_stream_si128((__m128i *)(a + i), v);
	_mm_sfence();
	return 0;
}

static double k_copy_nt(double *a, const double *b, const double *c, size_t n)
{
	for (size_t i = 0; i < n; i += 2)
		_mm_stream_si128((__m128i *)(a + i), _mm_load_si128((const __m128i *)(b + i)));
	_mm_sfence();
	return 0;
}

static double k_triad_nt(double *a, const double *b, const double *c, size_t n)
{
	const __m128d s = _mm_set1_pd(3.0);

	for (size_t i = 0; i < n; i += 2)
		_mm_stream_pd(a + i, _mm_add_pd(_mm_load_pd(b + i), _mm_mul_pd(s, _mm_load_pd(c + i))));
	_mm_sfence();
	return 0;
}
#define NK__NT(f) f
#else
#define NK__NT(f) NULL
#endif

static const struct nk__bench_kernel kernels[] = {
	{ NK_BENCH_READ, "read", 1, 8, 0, k_read },
	{ NK_BENCH_WRITE, "write", 1, 8, 0, k_write },
	{ NK_BENCH_COPY, "copy", 2, 16, 0, k_copy },
	{ NK_BENCH_TRIAD, "triad", 3, 24, 0, k_triad },
	{ NK_BENCH_WRITE_NT, "write_nt", 1, 8, 1, NK__NT(k_write_nt) },
	{ NK_BENCH_COPY_NT, "copy_nt", 2, 16, 1, NK__NT(k_copy_nt) },
	{ NK_BENCH_TRIAD_NT, "triad_nt", 3, 24, 1, NK__NT(k_triad_nt) },
};

const struct nk__bench_kernel *nk__bench_kernels(int *n)
{
	*n = (int)(sizeof kernels / sizeof kernels[0]);
	return kernels;
}

int nk__bench_have_nt(void)
{
#ifdef NK__HAVE_SSE2_BUILD
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse2") ? 1 : 0;
#else
	return 0;
#endif
}

double nk__bench_stride(const void *buf, size_t len, size_t stride, uint64_t *loads)
{
	const char *p = buf;
	uint64_t s = 0, k = 0;

	if (stride < NK__LINE)
		stride = NK__LINE;
	/* Lines one stride apart; every line once over all offsets. */
	for (size_t off = 0; off < stride && off < len; off += NK__LINE) {
		for (size_t i = off; i + sizeof(uint64_t) <= len; i += stride) {
			s += *(const volatile uint64_t *)(p + i);
			k++;
		}
	}
	*loads = k;
	return (double)s;
}

double nk__bench_random(const void *buf, size_t len, uint64_t seed, uint64_t *loads)
{
	const char *p = buf;
	size_t lines = len / NK__LINE, mask = 1;
	uint64_t st = seed, s = 0;

	if (!lines) {
		*loads = 0;
		return 0;
	}
	/* The largest power-of-two count of lines: a mask instead of a division. */
	while (mask * 2 <= lines)
		mask *= 2;
	mask -= 1;
	for (size_t i = 0; i < lines; i++)
		s += *(const volatile uint64_t *)(p + (nk__bench_rand(&st) & mask) * NK__LINE);
	*loads = lines;
	return (double)s;
}

void nk__bench_split(size_t nelem, int nthreads, int t, size_t *first, size_t *n)
{
	size_t blocks = nelem / 8, lo, hi;

	lo = blocks * (size_t)t / (size_t)nthreads;
	hi = blocks * (size_t)(t + 1) / (size_t)nthreads;
	*first = lo * 8;
	*n = (hi - lo) * 8;
}
