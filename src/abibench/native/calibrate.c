/*
 * abibench's noise probe: how fast one fixed CPU loop runs, chunk after chunk, on one CPU.
 *
 * Usage: abibench-calibrate CPU DURATION_MS CHUNK_ITERS OUT_FILE
 *   CPU          the CPU to pin to (-1: no pinning)
 *   DURATION_MS  how long to keep measuring
 *   CHUNK_ITERS  iterations per chunk (abibench sizes a chunk to about 10 ms)
 * Writes one line per chunk to OUT_FILE: "<end_ns> <duration_ns>" on CLOCK_MONOTONIC, the clock
 * every process of the machine shares, so the series of two CPUs can be laid side by side.
 *
 * The loop is a dependent integer recurrence with no memory traffic: its speed is the speed
 * the (virtual) CPU gives this process, nothing else. Exit status 0, or 125 on an error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A chain of dependent multiply-adds: the compiler cannot vectorise or drop it. */
static uint64_t chunk(uint64_t x, long iters) {
    for (long i = 0; i < iters; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    return x;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s CPU DURATION_MS CHUNK_ITERS OUT_FILE\n", argv[0]);
        return 125;
    }
    int cpu = atoi(argv[1]);
    long duration_ms = atol(argv[2]);
    long iters = atol(argv[3]);
    if (duration_ms <= 0 || iters <= 0) {
        fprintf(stderr, "abibench-calibrate: DURATION_MS and CHUNK_ITERS must be positive\n");
        return 125;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, "abibench-calibrate: cannot pin to CPU %d: %s\n", cpu,
                    strerror(errno));
            return 125;
        }
    }
    /* Up to one chunk per 100 us: plenty for any sensible chunk size, bounded memory. */
    long cap = duration_ms * 10 + 16;
    int64_t *ends = malloc((size_t)cap * sizeof *ends);
    int64_t *durs = malloc((size_t)cap * sizeof *durs);
    if (!ends || !durs) {
        fprintf(stderr, "abibench-calibrate: out of memory\n");
        return 125;
    }
    uint64_t x = 88172645463325252ULL;
    int64_t start = now_ns(), stop = start + (int64_t)duration_ms * 1000000LL;
    long n = 0;
    int64_t t0 = start;
    while (n < cap) {
        x = chunk(x, iters);
        int64_t t1 = now_ns();
        ends[n] = t1;
        durs[n] = t1 - t0;
        n++;
        t0 = t1;
        if (t1 >= stop) break;
    }
    FILE *out = fopen(argv[4], "w");
    if (!out) {
        fprintf(stderr, "abibench-calibrate: cannot write %s: %s\n", argv[4], strerror(errno));
        return 125;
    }
    for (long i = 0; i < n; i++) fprintf(out, "%lld %lld\n", (long long)ends[i],
                                         (long long)durs[i]);
    /* The loop's result goes out too, so it cannot be optimised away. */
    fprintf(out, "# x=%llu\n", (unsigned long long)x);
    return fclose(out) == 0 ? 0 : 125;
}
