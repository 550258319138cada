/*
 * stream: sustainable memory bandwidth, after John McCalpin's STREAM.
 *
 * Single-threaded on purpose: the question is what the ABI (pointer width,
 * register count, x87 vs SSE2 moves, vectorisation) does to one core's
 * streaming loop, not how many cores a machine has.  Bytes are counted the
 * way STREAM counts them (2 arrays for copy/scale, 3 for add/triad) and the
 * best repetition after the first is reported, as STREAM does.
 *
 * The default 10M elements make 3 x 80 MB = 240 MB: several times a 32 MB
 * L3, so caches cannot serve the kernels, yet far from the 3-4 GB that an
 * ILP32 process can address.  20 repetitions (STREAM uses 10) bring a run to
 * about a second on the reference VM, enough for stable best-of times.
 *
 * gcc -O2 turns the copy loop into a memcpy call on every ABI, so copy_mbs
 * measures each ABI's libc memcpy; STREAM built with gcc behaves the same.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char micro_prog[] = "stream";
#include "micro.h"

#define SCALAR 3.0

/* Tells the compiler the arrays were read and written by someone else, so it
 * can neither drop a kernel nor fuse repetitions together. */
#define CLOBBER(p) __asm__ __volatile__("" : : "r"(p) : "memory")

/* noinline keeps each kernel a separate, comparable loop on every ABI. */
__attribute__((noinline)) static void k_copy(double *restrict c, const double *restrict a, size_t n)
{
    for (size_t j = 0; j < n; j++)
        c[j] = a[j];
}

__attribute__((noinline)) static void k_scale(double *restrict b, const double *restrict c,
                                              double s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        b[j] = s * c[j];
}

__attribute__((noinline)) static void k_add(double *restrict c, const double *restrict a,
                                            const double *restrict b, size_t n)
{
    for (size_t j = 0; j < n; j++)
        c[j] = a[j] + b[j];
}

__attribute__((noinline)) static void k_triad(double *restrict a, const double *restrict b,
                                              const double *restrict c, double s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        a[j] = b[j] + s * c[j];
}

static void usage(FILE *f)
{
    fprintf(f, "usage: stream [--elements N] [--times T]\n"
               "  --elements N  doubles per array, 3 arrays (default 10000000 = 3 x 80 MB)\n"
               "  --times T     repetitions of the 4 kernels, 2..200; best after the first counts (default 20)\n");
}

int main(int argc, char **argv)
{
    uint32_t elements = 10000000u, times = 20;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--elements") == 0) {
            /* The cap keeps 3 arrays' byte counts within a 32-bit size_t. */
            if (parse_u32("--elements", a + 1 < argc ? argv[a + 1] : NULL, 1u, 100000000u,
                          &elements) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--times") == 0) {
            /* Values grow 15x per repetition; 200 stays clear of overflow. */
            if (parse_u32("--times", a + 1 < argc ? argv[a + 1] : NULL, 2u, 200u, &times) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "stream: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }

    size_t n = elements;
    double *a = xmalloc(n * sizeof *a, "array a");
    double *b = xmalloc(n * sizeof *b, "array b");
    double *c = xmalloc(n * sizeof *c, "array c");

    /* Touch every page before timing so page faults are not counted as bandwidth. */
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
    for (size_t j = 0; j < n; j++)
        a[j] = 2.0 * a[j];
    CLOBBER(a);

    enum { COPY, SCALE, ADD, TRIAD, NK };
    static const char *const names[NK] = {"copy", "scale", "add", "triad"};
    static const double arrays[NK] = {2, 2, 3, 3};
    double best[NK], sum_t[NK];
    for (int k = 0; k < NK; k++) {
        best[k] = DBL_MAX;
        sum_t[k] = 0;
    }

    double t_all = now_s();
    for (uint32_t r = 0; r < times; r++) {
        double t[NK + 1];
        t[0] = now_s();
        k_copy(c, a, n);
        CLOBBER(c);
        t[1] = now_s();
        k_scale(b, c, SCALAR, n);
        CLOBBER(b);
        t[2] = now_s();
        k_add(c, a, b, n);
        CLOBBER(c);
        t[3] = now_s();
        k_triad(a, b, c, SCALAR, n);
        CLOBBER(a);
        t[4] = now_s();
        /* The first pass warms TLBs and caches; STREAM skips it too. */
        if (r == 0)
            continue;
        for (int k = 0; k < NK; k++) {
            double dt = t[k + 1] - t[k];
            sum_t[k] += dt;
            if (dt < best[k])
                best[k] = dt;
        }
    }
    t_all = now_s() - t_all;

    /* Replay the kernels on scalars: every element must end up equal to this.
     * Values grow as 15^times, so past ~13 repetitions they are no longer
     * exact and x87 may round the replay differently from the stored arrays;
     * hence STREAM's relative tolerance, and a checksum printed to 7
     * significant digits, far above any such rounding. */
    double aj = 2.0, bj = 2.0, cj = 0.0;
    for (uint32_t r = 0; r < times; r++) {
        cj = aj;
        bj = SCALAR * cj;
        cj = aj + bj;
        aj = bj + SCALAR * cj;
    }
    double aerr = 0, berr = 0, cerr = 0;
    for (size_t j = 0; j < n; j++) {
        aerr += fabs(a[j] - aj);
        berr += fabs(b[j] - bj);
        cerr += fabs(c[j] - cj);
    }
    aerr /= (double)n;
    berr /= (double)n;
    cerr /= (double)n;
    /* STREAM's tolerance for double: 1e-13 relative average error. */
    int valid = aerr / fabs(aj) <= 1e-13 && berr / fabs(bj) <= 1e-13 && cerr / fabs(cj) <= 1e-13;

    printf("elements: %" PRIu32 "\n", elements);
    printf("times: %" PRIu32 "\n", times);
    printf("array_mb: %.1f\n", (double)n * sizeof(double) / 1e6);
    printf("total_mb: %.1f\n", 3.0 * (double)n * sizeof(double) / 1e6);
    for (int k = 0; k < NK; k++) {
        double bytes = arrays[k] * sizeof(double) * (double)n;
        printf("%s_best_s: %.6f\n", names[k], best[k]);
        printf("%s_avg_s: %.6f\n", names[k], sum_t[k] / (times - 1));
        printf("%s_mbs: %.1f\n", names[k], bytes / best[k] / 1e6);
    }
    printf("kernels_s: %.6f\n", t_all);
    printf("avg_err: %.3e %.3e %.3e\n", aerr, berr, cerr);
    /* Derived from the expected values only, so it is identical on every ABI
     * whenever the arrays hold what they should. */
    printf("checksum: %s-n%" PRIu32 "-t%" PRIu32 "-a%.6e-b%.6e-c%.6e\n", valid ? "ok" : "FAILED",
           elements, times, aj, bj, cj);

    free(a);
    free(b);
    free(c);
    if (!valid) {
        fprintf(stderr, "stream: validation failed (average errors %.3e %.3e %.3e)\n", aerr, berr,
                cerr);
        return 1;
    }
    return 0;
}
