/* A CMake project of your own: n bodies (a library and a program), `steps` steps. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "vec.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s BODIES STEPS\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]), steps = atol(argv[2]);
    if (n < 2 || steps < 1) {
        fprintf(stderr, "BODIES must be at least 2 and STEPS positive\n");
        return 2;
    }
    struct body *b = calloc((size_t)n, sizeof *b);
    if (!b) return 1;
    unsigned s = 12345;
    for (long i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            s = s * 1103515245u + 12345u;
            b[i].x[k] = (double)(s >> 8) / (1 << 24) * 10.0;
            b[i].v[k] = 0.0;
        }
        b[i].mass = 1.0 + (double)(i % 7);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long t = 0; t < steps; t++) advance(b, (size_t)n, 1e-4);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    /* x87 and SSE2 round differently: the energy agrees to about 6 digits; 5 are compared, not 17. */
    printf("energy: %.5e\n", energy(b, (size_t)n));
    printf("rate: %.1f\n", secs > 0 ? (double)steps * (double)n * (double)(n - 1) / 2 / secs : 0.0);
    free(b);
    return 0;
}
