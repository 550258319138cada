/* A program built elsewhere: CRC-32 (bitwise, no table) over a pseudo-random buffer, `rounds`
 * times. Built static by build.sh, so each file runs on any x86_64 Linux kernel that runs its
 * ELF class, with no C library of its ABI installed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint32_t crc32(const unsigned char *p, size_t n, uint32_t crc) {
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

int main(int argc, char **argv) {
    long kib = argc > 1 ? atol(argv[1]) : 1024, rounds = argc > 2 ? atol(argv[2]) : 8;
    if (kib < 1 || rounds < 1) {
        fprintf(stderr, "usage: %s KIB ROUNDS (positive)\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)kib * 1024;
    unsigned char *buf = malloc(n);
    if (!buf) return 1;
    uint64_t s = 88172645463325252ULL;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        buf[i] = (unsigned char)s;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t crc = 0;
    for (long r = 0; r < rounds; r++) crc = crc32(buf, n, crc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("checksum: %08x\n", crc);
    printf("rate: %.2f MiB/s\n", secs > 0 ? (double)n * (double)rounds / 1048576.0 / secs : 0.0);
    free(buf);
    return 0;
}
