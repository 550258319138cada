/* FNV-1a, 64-bit, over a buffer of n KiB of pseudo-random bytes, `rounds` times: a 64-bit
 * multiply per byte, which i386 makes of three 32-bit ones. Prints a checksum and a rate. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fnv.h"

int main(int argc, char **argv) {
    size_t kib = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
    unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 8;
    size_t n = kib * 1024;
    unsigned char *buf = malloc(n ? n : 1);
    if (buf == NULL) {
        fprintf(stderr, "out of memory for %zu KiB\n", kib);
        return 1;
    }
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        buf[i] = (unsigned char)x;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t h = 0;
    for (unsigned r = 0; r < rounds; r++)
        h ^= fnv1a64(buf, n, r);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("checksum: %016llx\n", (unsigned long long)h);
    printf("rate: %.1f\n", s > 0 ? (double)n * rounds / (1024.0 * 1024.0) / s : 0.0);
    free(buf);
    return 0;
}
