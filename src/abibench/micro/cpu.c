/*
 * cpu: the CPU tests of an XBench-style suite, one per run, chosen with --test.
 *
 *   gcd   Euclid's algorithm on pseudo-random 32-bit pairs: integer division and
 *         unpredictable branches, no memory traffic.
 *   fp    basic floating point: a damped multiply-add recurrence over two small
 *         arrays that stay in L1, so only the FPU (x87 on i386, SSE2 on x86_64
 *         and x32, which gcc -O2 may also vectorise) decides the speed.
 *   fft   an iterative radix-2 complex FFT of our own, forward and inverse in
 *         turn; rates are counted as 5 N log2 N flops per transform, the usual
 *         convention for complex FFTs.
 *   libm  sin, cos, tan, atan, exp, log, pow and sqrt, each called once per
 *         input: every ABI links its own libm, and i386's has x87 code paths.
 *
 * Floating-point checksums: i386 keeps intermediates in 80-bit x87 registers
 * and its libm is a different implementation, so results may differ from
 * x86_64 in the last bits.  Each test therefore prints its checksum with only
 * as many significant digits as the computation determines far more precisely
 * than that (the comment at each printf says why the margin is safe); the
 * exact bits are printed alongside with %a for the record, not compared.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char micro_prog[] = "cpu";
#include "micro.h"

/* Written out rather than taken from M_PI, which strict C11 does not define. */
#define TWO_PI 6.283185307179586

/* ------------------------------------------------------------------ gcd */

static uint32_t gcd32(uint32_t a, uint32_t b)
{
    while (b != 0) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int test_gcd(uint32_t ops)
{
    uint64_t sum = 0, hash = 0;
    uint32_t ones = 0;
    double t0 = now_s();
    for (uint32_t i = 0; i < ops; i++) {
        /* Two independent streams; +1 keeps b away from 0 without a branch. */
        uint32_t a = mix32(2u * i + 0x3c6ef372u);
        uint32_t b = mix32(2u * i + 0x3c6ef373u) | 1u;
        uint32_t g = gcd32(a, b);
        sum += g;
        ones += g == 1u;
        hash = (hash ^ g) * 0x100000001b3ull;
    }
    double elapsed = now_s() - t0;

    printf("test: gcd\n");
    printf("ops: %" PRIu32 "\n", ops);
    printf("coprime: %" PRIu32 "\n", ones);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mops: %.3f\n", ops / elapsed / 1e6);
    printf("checksum: %016" PRIx64 "\n", mix64(sum ^ mix64(hash)));
    return 0;
}

/* ------------------------------------------------------------------- fp */

#define FP_LEN 512 /* 2 x 4 KiB: both arrays stay in L1 on every x86 of the last 20 years */

static int test_fp(uint32_t reps)
{
    static double x[FP_LEN], y[FP_LEN];
    /* Eight multipliers cycled by repetition keep the state moving; a single
     * one would park every y[i] on a fixed point after a few hundred steps. */
    static const double alpha[8] = {0.5, 0.25, 0.75, 0.125, 0.875, 0.375, 0.625, 1.0};
    const double c = 0.9990234375; /* 1 - 2^-10, exact in binary */

    for (int i = 0; i < FP_LEN; i++) {
        x[i] = (double)(mix32((uint32_t)i) >> 8) / 16777216.0; /* [0, 1), 24 exact bits */
        y[i] = 0.0;
    }
    double t0 = now_s();
    for (uint32_t r = 0; r < reps; r++) {
        const double a = alpha[r & 7u];
        for (int i = 0; i < FP_LEN; i++)
            y[i] = y[i] * c + a * x[i];
        /* Keeps gcc from interchanging the loops or collapsing repetitions. */
        __asm__ __volatile__("" : : "r"(y) : "memory");
    }
    double elapsed = now_s() - t0;

    double sum = 0.0;
    for (int i = 0; i < FP_LEN; i++)
        sum += y[i];
    double flops = 3.0 * FP_LEN * (double)reps;

    printf("test: fp\n");
    printf("reps: %" PRIu32 "\n", reps);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("gflops: %.4f\n", flops / elapsed / 1e9);
    printf("sum_bits: %a\n", sum);
    /* The recurrence contracts by c every step, so a rounding difference
     * between x87 and SSE2 stays below ~1/(1-c) = 1024 ulps (~2e-13 relative)
     * however many repetitions run; 9 significant digits are far above it. */
    printf("checksum: %.8e\n", sum);
    return 0;
}

/* ------------------------------------------------------------------ fft */

struct fft {
    uint32_t n;
    unsigned log2n;
    double *re, *im;   /* data, split real/imaginary parts */
    double *wre, *wim; /* n/2 twiddles exp(-2 pi i k / n) */
    uint32_t *rev;     /* bit-reversal permutation */
};

static void fft_init(struct fft *f, uint32_t n)
{
    f->n = n;
    f->log2n = 0;
    while ((1u << f->log2n) < n)
        f->log2n++;
    f->re = xmalloc(n * sizeof(double), "fft data");
    f->im = xmalloc(n * sizeof(double), "fft data");
    f->wre = xmalloc(n / 2 * sizeof(double), "fft twiddles");
    f->wim = xmalloc(n / 2 * sizeof(double), "fft twiddles");
    f->rev = xmalloc(n * sizeof(uint32_t), "fft permutation");
    for (uint32_t k = 0; k < n / 2; k++) {
        f->wre[k] = cos(TWO_PI * k / n);
        f->wim[k] = -sin(TWO_PI * k / n);
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = 0;
        for (unsigned b = 0; b < f->log2n; b++)
            r |= ((i >> b) & 1u) << (f->log2n - 1 - b);
        f->rev[i] = r;
    }
}

static void fft_free(struct fft *f)
{
    free(f->re);
    free(f->im);
    free(f->wre);
    free(f->wim);
    free(f->rev);
}

/* In place; inverse uses the conjugate twiddles and scales by 1/n so that a
 * forward + inverse pair returns the input. */
static void fft_run(struct fft *f, int inverse)
{
    const uint32_t n = f->n;
    double *re = f->re, *im = f->im;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = f->rev[i];
        if (j > i) {
            double t = re[i];
            re[i] = re[j];
            re[j] = t;
            t = im[i];
            im[i] = im[j];
            im[j] = t;
        }
    }
    const double sign = inverse ? -1.0 : 1.0;
    for (uint32_t len = 2; len <= n; len <<= 1) {
        const uint32_t half = len >> 1, step = n / len;
        for (uint32_t base = 0; base < n; base += len) {
            for (uint32_t k = 0; k < half; k++) {
                const double wr = f->wre[k * step], wi = sign * f->wim[k * step];
                const uint32_t p = base + k, q = p + half;
                const double tr = re[q] * wr - im[q] * wi;
                const double ti = re[q] * wi + im[q] * wr;
                re[q] = re[p] - tr;
                im[q] = im[p] - ti;
                re[p] += tr;
                im[p] += ti;
            }
        }
    }
    if (inverse) {
        const double s = 1.0 / n;
        for (uint32_t i = 0; i < n; i++) {
            re[i] *= s;
            im[i] *= s;
        }
    }
}

static int test_fft(uint32_t n, uint32_t reps)
{
    struct fft f;
    fft_init(&f, n);
    double *orig = xmalloc(n * sizeof(double), "fft input");

    /* Two tones on exact bins (3 and n/8+1) plus low-level deterministic noise,
     * so the spectrum has two known peaks well above everything else. */
    const uint32_t bin_a = 3, bin_b = n / 8 + 1;
    for (uint32_t i = 0; i < n; i++) {
        double noise = ((double)(mix32(i ^ 0x51ed270bu) >> 8) / 16777216.0 - 0.5) * 1e-3;
        orig[i] = cos(TWO_PI * bin_a * i / n) + 0.5 * sin(TWO_PI * bin_b * i / n) + noise;
        f.re[i] = orig[i];
        f.im[i] = 0.0;
    }

    double t0 = now_s();
    for (uint32_t r = 0; r < reps; r++) {
        fft_run(&f, 0);
        fft_run(&f, 1);
    }
    double elapsed = now_s() - t0;

    double max_err = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        double e = fabs(f.re[i] - orig[i]) + fabs(f.im[i]);
        if (e > max_err)
            max_err = e;
    }
    fft_run(&f, 0);
    double energy = 0.0, mag_a = hypot(f.re[bin_a], f.im[bin_a]),
           mag_b = hypot(f.re[bin_b], f.im[bin_b]);
    uint32_t peak = 0;
    for (uint32_t i = 0; i < n / 2; i++) {
        double m = f.re[i] * f.re[i] + f.im[i] * f.im[i];
        energy += m;
        if (m > f.re[peak] * f.re[peak] + f.im[peak] * f.im[peak])
            peak = i;
    }
    /* Round-trip error grows like sqrt(reps) * log2(n) * eps; 1e-9 leaves
     * orders of magnitude of room while still catching a broken transform. */
    int ok = max_err < 1e-9;
    double flops = 2.0 * reps * 5.0 * n * f.log2n;

    printf("test: fft\n");
    printf("size: %" PRIu32 "\n", n);
    printf("reps: %" PRIu32 "\n", reps);
    printf("roundtrip_max_err: %.3e\n", max_err);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("gflops: %.4f\n", flops / elapsed / 1e9);
    /* Peak magnitudes are n/2 and n/4 give or take the 1e-3 noise; the ABIs'
     * different sin/cos and x87 rounding move them by ~1e-13 relative, so 7
     * significant digits (and the peak bin) are exact on both. */
    printf("checksum: %s-peak%" PRIu32 "-a%.6e-b%.6e-e%.6e\n", ok ? "ok" : "FAILED", peak,
           mag_a, mag_b, energy);
    fft_free(&f);
    free(orig);
    if (!ok) {
        fprintf(stderr, "cpu: fft round trip error %.3e is too large: the transform is broken\n",
                max_err);
        return 1;
    }
    return 0;
}

/* ----------------------------------------------------------------- libm */

static int test_libm(uint32_t count)
{
    /* Accumulating |f(x)| keeps every term positive: no cancellation, so the
     * relative error of the sums stays near count * eps at worst. */
    double s_sin = 0, s_cos = 0, s_tan = 0, s_atan = 0, s_exp = 0, s_log = 0, s_pow = 0,
           s_sqrt = 0;
    double t0 = now_s();
    for (uint32_t i = 0; i < count; i++) {
        const double u = ((double)i + 0.5) / count; /* (0, 1) */
        /* The 0.1 offset keeps sin and cos away from their exact zeros, where a
         * lone term of ~1e-16 would be all rounding and nothing else. */
        const double a = u * TWO_PI + 0.1;
        s_sin += fabs(sin(a));
        s_cos += fabs(cos(a));
        s_tan += fabs(tan(u * 1.5)); /* stays below pi/2 */
        s_atan += atan(u * 8.0);
        s_exp += exp(u * 10.0 - 5.0);
        s_log += fabs(log(u * 100.0));
        s_pow += pow(u + 0.5, 2.5);
        s_sqrt += sqrt(u * 1000.0);
    }
    double elapsed = now_s() - t0;
    double total = s_sin + s_cos + s_tan + s_atan + s_exp + s_log + s_pow + s_sqrt;

    printf("test: libm\n");
    printf("count: %" PRIu32 "\n", count);
    printf("calls: %.0f\n", 8.0 * count);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mops: %.3f\n", 8.0 * count / elapsed / 1e6);
    printf("sum_bits: %a\n", total);
    /* Both libms are accurate to about 1 ulp; with positive terms the sums
     * differ by ~1e-13 relative even at 10^8 calls, so 8 significant digits
     * per function sum are stable while a wrong function would still show. */
    printf("checksum: %.7e-%.7e-%.7e-%.7e-%.7e-%.7e-%.7e-%.7e\n", s_sin, s_cos, s_tan, s_atan,
           s_exp, s_log, s_pow, s_sqrt);
    return 0;
}

/* ----------------------------------------------------------------- main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cpu --test gcd|fp|fft|libm [options]\n"
            "  --ops N    gcd: pairs to reduce (default 8000000)\n"
            "  --reps N   fp: sweeps over the arrays (default 1500000);\n"
            "             fft: forward+inverse pairs (default 1500)\n"
            "  --size N   fft: points, a power of two in [16, 16777216] (default 4096)\n"
            "  --count N  libm: inputs, each through 8 functions (default 1500000)\n");
}

int main(int argc, char **argv)
{
    const char *test = NULL;
    uint32_t ops = 8000000u, reps = 0, size = 4096u, count = 1500000u;

    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--test") == 0) {
            if (v == NULL) {
                fprintf(stderr, "cpu: --test needs a name: gcd, fp, fft or libm\n");
                return 2;
            }
            test = v;
            a++;
        } else if (strcmp(argv[a], "--ops") == 0) {
            if (parse_u32("--ops", v, 1u, UINT32_MAX, &ops) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--reps") == 0) {
            if (parse_u32("--reps", v, 1u, UINT32_MAX, &reps) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--size") == 0) {
            if (parse_u32("--size", v, 16u, 16777216u, &size) != 0)
                return 2;
            if ((size & (size - 1u)) != 0) {
                fprintf(stderr, "cpu: --size must be a power of two, got %" PRIu32 "\n", size);
                return 2;
            }
            a++;
        } else if (strcmp(argv[a], "--count") == 0) {
            if (parse_u32("--count", v, 1u, UINT32_MAX, &count) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "cpu: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }
    if (test == NULL) {
        fprintf(stderr, "cpu: say which test to run: --test gcd, fp, fft or libm\n");
        return 2;
    }
    if (strcmp(test, "gcd") == 0)
        return test_gcd(ops);
    if (strcmp(test, "fp") == 0)
        return test_fp(reps != 0 ? reps : 1500000u);
    if (strcmp(test, "fft") == 0)
        return test_fft(size, reps != 0 ? reps : 1500u);
    if (strcmp(test, "libm") == 0)
        return test_libm(count);
    fprintf(stderr, "cpu: unknown test '%s': choose gcd, fp, fft or libm\n", test);
    return 2;
}
