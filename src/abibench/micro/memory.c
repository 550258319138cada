/*
 * memory: the memory tests of an XBench-style suite, chosen with --test.
 *
 *   malloc-small  churn through a window of 1024 live blocks of 8..256 bytes:
 *                 each step frees one block and allocates another, so glibc's
 *                 tcache/fastbins and chunk headers (4 vs 8 bytes of size
 *                 field, 16-byte alignment on both) are what is timed.
 *   malloc-large  the same churn over 16 live blocks of 64 KiB..1 MiB, one byte
 *                 written at each end.  glibc serves large blocks from mmap
 *                 above a threshold that adapts upwards to at most 512 KiB on
 *                 32-bit and 32 MiB on 64-bit ABIs, so the two ABIs do not
 *                 even make the same system calls here: that is the point.
 *   fill          memset over a buffer larger than the caches.
 *   copy          memcpy of one large buffer to another in one call.
 *   blocks        mbw's MCBLOCK: the same copy done as memcpy calls of 64 B,
 *                 4 KiB, 64 KiB and 1 MiB; at 64 B the call itself (PLT, and
 *                 i386's PIC register) costs as much as the bytes.
 *
 * Bandwidths count each byte once (bytes filled, bytes copied), as mbw and
 * XBench do; STREAM (stream.c) counts reads and writes separately.
 * Checksums fold sampled bytes of the result and the sizes allocated: the
 * same on every ABI because every size and value comes from fixed-width
 * integer arithmetic.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char micro_prog[] = "memory";
#include "micro.h"

#define MIB (1024u * 1024u)

/* Tells the compiler the buffer was read and written by someone else, so it
 * can neither drop a repetition nor merge two. */
#define CLOBBER(p) __asm__ __volatile__("" : : "r"(p) : "memory")

/* ------------------------------------------------------------ malloc churn */

static int test_malloc(const char *name, uint32_t allocs, uint32_t window, uint32_t min_size,
                       uint32_t max_size)
{
    unsigned char **live = calloc(window, sizeof *live);
    uint32_t *sizes = calloc(window, sizeof *sizes);
    if (live == NULL || sizes == NULL) {
        fprintf(stderr, "memory: out of memory allocating the block table\n");
        return 1;
    }
    uint64_t bytes = 0, hash = 0;
    const uint32_t span = max_size - min_size + 1u;

    double t0 = now_s();
    for (uint32_t i = 0; i < allocs; i++) {
        /* A pseudo-random slot, so frees do not simply mirror allocations. */
        uint32_t slot = (uint32_t)(((uint64_t)mix32(i ^ 0x1b873593u) * window) >> 32);
        unsigned char *old = live[slot];
        if (old != NULL) {
            hash = (hash ^ old[0] ^ (uint64_t)old[sizes[slot] - 1u] << 8) * 0x100000001b3ull;
            free(old);
        }
        uint32_t size = min_size + mix32(i + 0x85ebca6bu) % span;
        unsigned char *p = malloc(size);
        if (p == NULL) {
            fprintf(stderr, "memory: malloc(%" PRIu32 ") failed after %" PRIu32 " calls\n",
                    size, i);
            return 1;
        }
        /* First and last byte only: the block is really used, yet the test
         * stays about the allocator (and, for mmap'd blocks, two page faults)
         * rather than about memset. */
        p[0] = (unsigned char)i;
        p[size - 1u] = (unsigned char)(i >> 8);
        live[slot] = p;
        sizes[slot] = size;
        bytes += size;
    }
    double elapsed = now_s() - t0;

    for (uint32_t s = 0; s < window; s++)
        free(live[s]);
    free(live);
    free(sizes);

    printf("test: %s\n", name);
    printf("allocs: %" PRIu32 "\n", allocs);
    printf("window: %" PRIu32 "\n", window);
    printf("bytes_allocated: %" PRIu64 "\n", bytes);
    printf("elapsed_s: %.6f\n", elapsed);
    /* Each step is one malloc and (after the window fills) one free. */
    printf("mallocs_per_s: %.1f\n", allocs / elapsed);
    printf("checksum: %016" PRIx64 "\n", mix64(hash ^ mix64(bytes)));
    return 0;
}

/* --------------------------------------------------------------- fill/copy */

static void pattern(unsigned char *buf, size_t n)
{
    /* 32-bit words stored least significant byte first, whatever the machine's byte order:
     * sample_hash reads bytes, and its checksum must be the same on SPARC as on x86. */
    for (size_t i = 0; i + 4 <= n; i += 4) {
        uint32_t w = mix32((uint32_t)(i >> 2));
        buf[i] = (unsigned char)w;
        buf[i + 1] = (unsigned char)(w >> 8);
        buf[i + 2] = (unsigned char)(w >> 16);
        buf[i + 3] = (unsigned char)(w >> 24);
    }
}

static uint64_t sample_hash(const unsigned char *buf, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i += 4093) /* a prime stride touches every byte lane */
        h = (h ^ buf[i]) * 0x100000001b3ull;
    return mix64(h ^ buf[n - 1]);
}

static int test_fill(uint32_t mb, uint32_t reps)
{
    size_t n = (size_t)mb * MIB;
    unsigned char *buf = xmalloc(n, "the buffer");
    memset(buf, 0xff, n); /* fault the pages in before timing */
    uint64_t h = 0;
    double t0 = now_s();
    for (uint32_t r = 0; r < reps; r++) {
        memset(buf, (int)(r & 0xffu), n);
        CLOBBER(buf);
        h ^= mix64(buf[(size_t)mix32(r) % n] + (uint64_t)r);
    }
    double elapsed = now_s() - t0;
    h ^= sample_hash(buf, n);

    printf("test: fill\n");
    printf("mb: %" PRIu32 "\n", mb);
    printf("reps: %" PRIu32 "\n", reps);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mbs: %.1f\n", (double)n * reps / elapsed / 1e6);
    printf("checksum: %016" PRIx64 "\n", h);
    free(buf);
    return 0;
}

static int test_copy(uint32_t mb, uint32_t reps)
{
    size_t n = (size_t)mb * MIB;
    unsigned char *src = xmalloc(n, "the source buffer");
    unsigned char *dst = xmalloc(n, "the destination buffer");
    pattern(src, n);
    memset(dst, 0, n);
    double t0 = now_s();
    for (uint32_t r = 0; r < reps; r++) {
        /* Alternate direction so each pass copies what the last one wrote. */
        if (r & 1u)
            memcpy(src, dst, n);
        else
            memcpy(dst, src, n);
        CLOBBER(dst);
        CLOBBER(src);
    }
    double elapsed = now_s() - t0;

    printf("test: copy\n");
    printf("mb: %" PRIu32 "\n", mb);
    printf("reps: %" PRIu32 "\n", reps);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mbs: %.1f\n", (double)n * reps / elapsed / 1e6);
    printf("checksum: %016" PRIx64 "\n", sample_hash(dst, n) ^ mix64(sample_hash(src, n)));
    free(src);
    free(dst);
    return 0;
}

static int test_blocks(uint32_t mb, uint32_t reps)
{
    static const uint32_t blocks[] = {64u, 4096u, 65536u, MIB};
    static const char *const names[] = {"b64", "b4k", "b64k", "b1m"};
    size_t n = (size_t)mb * MIB;
    unsigned char *src = xmalloc(n, "the source buffer");
    unsigned char *dst = xmalloc(n, "the destination buffer");
    pattern(src, n);
    memset(dst, 0, n);
    uint64_t h = 0;

    printf("test: blocks\n");
    printf("mb: %" PRIu32 "\n", mb);
    printf("reps: %" PRIu32 "\n", reps);
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
        /* volatile: a block size the compiler cannot see, so every memcpy is a
         * real library call as in mbw, never an inlined move of a constant. */
        volatile uint32_t vblock = blocks[b];
        const size_t block = vblock;
        double t0 = now_s();
        for (uint32_t r = 0; r < reps; r++) {
            for (size_t off = 0; off + block <= n; off += block)
                memcpy(dst + off, src + off, block);
            CLOBBER(dst);
        }
        double elapsed = now_s() - t0;
        h = mix64(h ^ sample_hash(dst, n));
        memset(dst, 0, n);
        printf("%s_elapsed_s: %.6f\n", names[b], elapsed);
        printf("%s_mbs: %.1f\n", names[b], (double)(n - n % block) * reps / elapsed / 1e6);
    }
    printf("checksum: %016" PRIx64 "\n", h);
    free(src);
    free(dst);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: memory --test malloc-small|malloc-large|fill|copy|blocks [options]\n"
            "  --allocs N  malloc-*: malloc calls (default 12000000 small, 150000 large)\n"
            "  --mb N      fill, copy, blocks: buffer size in MiB, 1..1024 (default 64)\n"
            "  --reps N    fill, copy, blocks: passes over the buffer (default 100, 60, 12)\n");
}

int main(int argc, char **argv)
{
    const char *test = NULL;
    uint32_t allocs = 0, mb = 64u, reps = 0;

    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--test") == 0) {
            if (v == NULL) {
                fprintf(stderr, "memory: --test needs a name: malloc-small, malloc-large, fill, "
                        "copy or blocks\n");
                return 2;
            }
            test = v;
            a++;
        } else if (strcmp(argv[a], "--allocs") == 0) {
            if (parse_u32("--allocs", v, 1u, UINT32_MAX, &allocs) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--mb") == 0) {
            /* Two 1 GiB buffers are about what a 32-bit process can still map. */
            if (parse_u32("--mb", v, 1u, 1024u, &mb) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--reps") == 0) {
            if (parse_u32("--reps", v, 1u, 100000u, &reps) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "memory: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }
    if (test == NULL) {
        fprintf(stderr, "memory: say which test to run: --test malloc-small, malloc-large, fill, "
                "copy or blocks\n");
        return 2;
    }
    if (strcmp(test, "malloc-small") == 0)
        return test_malloc(test, allocs != 0 ? allocs : 12000000u, 1024u, 8u, 256u);
    if (strcmp(test, "malloc-large") == 0)
        return test_malloc(test, allocs != 0 ? allocs : 150000u, 16u, 64u * 1024u, MIB);
    if (strcmp(test, "fill") == 0)
        return test_fill(mb, reps != 0 ? reps : 100u);
    if (strcmp(test, "copy") == 0)
        return test_copy(mb, reps != 0 ? reps : 60u);
    if (strcmp(test, "blocks") == 0)
        return test_blocks(mb, reps != 0 ? reps : 12u);
    fprintf(stderr, "memory: unknown test '%s': choose malloc-small, malloc-large, fill, copy or "
            "blocks\n", test);
    return 2;
}
