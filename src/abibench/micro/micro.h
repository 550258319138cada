/*
 * micro.h: helpers shared by the micro-benchmark programs beside it.
 *
 * Each program is a single translation unit that includes this header after
 * its system headers (and after defining _POSIX_C_SOURCE, which
 * clock_gettime needs), having first defined the name its messages start
 * with:
 *
 *     static const char micro_prog[] = "cpu";
 *     #include "micro.h"
 *
 * Everything here is static inline, so a program that uses only some of the
 * helpers gets no unused-function warnings for the rest.
 */
#ifndef ABIBENCH_MICRO_H
#define ABIBENCH_MICRO_H

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether abibench is counting this run's instructions (ABIBENCH_COUNTING is set): a
 * program then skips reading what differs from run to run (/proc), so that two counts of
 * one build are identical. (The clock is made repeatable from outside: native/stepclock.c.) */
static inline int micro_counting(void)
{
    const char *v = getenv("ABIBENCH_COUNTING");
    return v != NULL && v[0] != '\0';
}

/* Chris Wellons' lowbias32: every step is invertible, so distinct inputs give
 * distinct outputs (which is what lets ptrtree build "absent" keys without a
 * lookup). */
static inline uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* The splitmix64 finaliser. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Parses option NAME's value S (NULL when the option came last) as a decimal
 * integer in [lo, hi] into *out; otherwise prints
 * "<prog>: NAME needs an integer in [lo, hi], got 'S'" and returns -1. */
static inline int parse_u32(const char *name, const char *s, uint32_t lo, uint32_t hi,
                            uint32_t *out)
{
    char *end;
    unsigned long long v = 0;
    int ok = 0;

    /* strtoull silently accepts "-5" as a huge number; refuse signs. */
    if (s != NULL && *s >= '0' && *s <= '9') {
        errno = 0;
        v = strtoull(s, &end, 10);
        ok = errno == 0 && *end == '\0' && v >= lo && v <= hi;
    }
    if (!ok) {
        fprintf(stderr, "%s: %s needs an integer in [%" PRIu32 ", %" PRIu32 "], got '%s'\n",
                micro_prog, name, lo, hi, s != NULL ? s : "");
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* malloc, or exit(1) after "<prog>: out of memory allocating WHAT: HINT" when
 * hint is given, "<prog>: out of memory allocating WHAT (N bytes)" when not. */
static inline void *xmalloc_hint(size_t n, const char *what, const char *hint)
{
    void *p = malloc(n);
    if (p == NULL) {
        if (hint != NULL)
            fprintf(stderr, "%s: out of memory allocating %s: %s\n", micro_prog, what, hint);
        else
            fprintf(stderr, "%s: out of memory allocating %s (%zu bytes)\n", micro_prog, what, n);
        exit(1);
    }
    return p;
}

static inline void *xmalloc(size_t n, const char *what)
{
    return xmalloc_hint(n, what, NULL);
}

#endif /* ABIBENCH_MICRO_H */
