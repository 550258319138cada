/* A small program of your own: sums a series and prints a rate and a checksum. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10000000;
    uint64_t h = 1469598103934665603ULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        h ^= (uint64_t)i;
        h *= 1099511628211ULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("rate: %.3f\n", s > 0 ? (double)n / s / 1e6 : 0.0);
    printf("checksum: %016llx\n", (unsigned long long)h);
    return 0;
}
