/*
 * diskio: uncached disk transfers, XBench's disk test: sequential or random,
 * read or write, in blocks of a given size, on a temporary file.
 *
 * Uncached means O_DIRECT: every request goes to the device, not to the page
 * cache.  Filesystems that refuse O_DIRECT (tmpfs on older kernels, some
 * FUSE and network filesystems) get normal I/O instead, with fdatasync
 * before the clock stops and posix_fadvise(DONTNEED) to evict the file
 * before reads; the output then says `direct: no` and why, so a report can
 * tell a device figure from a page-cache one.
 *
 * The file never outlives the process: it is created with O_TMPFILE (no name
 * at all) or, where the filesystem lacks that, created and unlinked at once
 * with SIGINT/SIGTERM/SIGHUP blocked in between.  Ctrl-C, a timeout's
 * SIGKILL or a crash all leave nothing behind in --dir.
 *
 * What is timed:
 *   seq write   the whole file written block by block into a new file, then
 *               fdatasync (the data must reach the device).
 *   seq read    the whole file read block by block (written beforehand).
 *   rand write  --ops overwrites of random blocks of a written file, then
 *               fdatasync.
 *   rand read   --ops reads of random blocks.
 * Every block carries its index and a generation stamp at both ends; reads
 * check them and, after a write test, the whole file is read back (untimed)
 * and checked, so the checksum proves every block landed where it belongs.
 * Random offsets come from a fixed-width integer hash: the same on every ABI.
 */
#define _GNU_SOURCE /* O_DIRECT, O_TMPFILE */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char micro_prog[] = "diskio";
#include "micro.h"

#define ALIGN 4096u
#define MIB (1024u * 1024u)
#define STAMP_SALT 0x6a09e667f3bcc908ull

static void die(const char *what)
{
    fprintf(stderr, "diskio: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ------------------------------------------------------------------ file */

static int open_unlinked(const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
        fprintf(stderr, "diskio: cannot create a file in --dir %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    /* No O_TMPFILE here: a named file, unlinked before any signal that a user
     * or a timeout sends can end us between the two calls. */
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/abibench-diskio-XXXXXX", dir) >= (int)sizeof path) {
        fprintf(stderr, "diskio: --dir path is too long\n");
        exit(2);
    }
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGQUIT);
    sigprocmask(SIG_BLOCK, &block, &old);
    fd = mkstemp(path);
    int saved = errno;
    if (fd >= 0 && unlink(path) != 0)
        saved = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        fprintf(stderr, "diskio: cannot create a file in --dir %s: %s\n", dir, strerror(saved));
        exit(1);
    }
    return fd;
}

struct disk {
    int fd;
    int direct;
    const char *why_not; /* when direct == 0 */
};

/* O_DIRECT is switched on after creation rather than passed to open(): some
 * filesystems create the file and only then fail the open with EINVAL,
 * which would leave a file behind. */
static void try_direct(struct disk *d)
{
    int fl = fcntl(d->fd, F_GETFL);
    if (fl >= 0 && fcntl(d->fd, F_SETFL, fl | O_DIRECT) == 0) {
        d->direct = 1;
        return;
    }
    d->direct = 0;
    d->why_not = errno == EINVAL ? "the filesystem refuses O_DIRECT" : strerror(errno);
}

static void drop_direct(struct disk *d, const char *why)
{
    int fl = fcntl(d->fd, F_GETFL);
    if (fl < 0 || fcntl(d->fd, F_SETFL, fl & ~O_DIRECT) != 0)
        die("cannot turn O_DIRECT off");
    d->direct = 0;
    d->why_not = why;
}

static void xfer(struct disk *d, int write, void *buf, size_t len, uint64_t off)
{
    for (;;) {
        ssize_t n = write ? pwrite(d->fd, buf, len, (off_t)off) : pread(d->fd, buf, len, (off_t)off);
        if (n == (ssize_t)len)
            return;
        /* A filesystem may accept the O_DIRECT flag yet refuse the I/O itself
         * (ext4 with data=journal does); then fall back, once. */
        if (n < 0 && errno == EINVAL && d->direct) {
            drop_direct(d, "the filesystem accepts O_DIRECT but refuses direct I/O");
            continue;
        }
        if (n < 0)
            die(write ? "write failed" : "read failed");
        fprintf(stderr, "diskio: short %s at offset %" PRIu64 " (%zd of %zu bytes): is the disk "
                "full? lower --mb\n", write ? "write" : "read", off, n, len);
        exit(1);
    }
}

static void sync_and_evict(struct disk *d)
{
    if (fdatasync(d->fd) != 0)
        die("fdatasync failed");
    /* Without O_DIRECT the just-written pages would serve the reads. */
    if (!d->direct)
        (void)posix_fadvise(d->fd, 0, 0, POSIX_FADV_DONTNEED);
}

/* ---------------------------------------------------------------- stamps */

static void stamp(unsigned char *blk, size_t block, uint64_t index, uint64_t gen)
{
    uint64_t head = index ^ STAMP_SALT, tail = gen ^ mix64(index);
    memcpy(blk, &head, 8);
    memcpy(blk + 8, &gen, 8);
    memcpy(blk + block - 8, &tail, 8);
}

/* Returns the generation, or exits when the block is not the one asked for. */
static uint64_t check(const unsigned char *blk, size_t block, uint64_t index)
{
    uint64_t head, gen, tail;
    memcpy(&head, blk, 8);
    memcpy(&gen, blk + 8, 8);
    memcpy(&tail, blk + block - 8, 8);
    if (head != (index ^ STAMP_SALT) || tail != (gen ^ mix64(index))) {
        fprintf(stderr, "diskio: block %" PRIu64 " read back wrong (torn or misplaced): the "
                "device or filesystem lost data\n", index);
        exit(1);
    }
    return gen;
}

static void *aligned(size_t n)
{
    void *p = NULL;
    int rc = posix_memalign(&p, ALIGN, n);
    if (rc != 0) {
        fprintf(stderr, "diskio: out of memory for a %zu-byte buffer\n", n);
        exit(1);
    }
    return p;
}

/* Write or read the whole file in large chunks, untimed: preparation before
 * a read test and verification after a write test. */
static uint64_t whole_file(struct disk *d, int write, unsigned char *chunk, size_t chunk_len,
                           size_t block, uint64_t nblocks)
{
    uint64_t hash = 0;
    const uint64_t per = chunk_len / block;
    for (uint64_t b = 0; b < nblocks; b += per) {
        uint64_t k = nblocks - b < per ? nblocks - b : per;
        if (write) {
            for (uint64_t j = 0; j < k; j++)
                stamp(chunk + j * block, block, b + j, 1);
            xfer(d, 1, chunk, (size_t)(k * block), b * block);
        } else {
            xfer(d, 0, chunk, (size_t)(k * block), b * block);
            for (uint64_t j = 0; j < k; j++)
                hash = mix64(hash ^ check(chunk + j * block, block, b + j) ^ ((b + j) << 20));
        }
    }
    return hash;
}

static uint64_t random_block(uint32_t i, uint64_t nblocks)
{
    /* A multiply-shift maps the hash onto [0, nblocks) without a 64-bit
     * division, which would be a libgcc call on i386. */
    return (uint64_t)(((uint64_t)mix32(i ^ 0x9e3779b9u) * (uint32_t)nblocks) >> 32);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: diskio --op read|write --pattern seq|rand --dir DIR [options]\n"
            "  --block N  bytes per request, a multiple of 4096 up to 16 MiB (default 4096)\n"
            "  --mb N     size of the temporary file in MiB (default 64)\n"
            "  --ops N    requests in a random test (default 2000; seq always does the file)\n"
            "  --dir DIR  where the temporary file lives (it never has a name there for long)\n"
            "  --buffered page-cache I/O with fdatasync and fadvise even where O_DIRECT works\n");
}

int main(int argc, char **argv)
{
    const char *op = NULL, *pattern = NULL, *dir = NULL;
    uint32_t block = 4096u, mb = 64u, ops = 2000u;
    int buffered = 0;

    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--op") == 0 || strcmp(argv[a], "--pattern") == 0 ||
                   strcmp(argv[a], "--dir") == 0) {
            if (v == NULL) {
                fprintf(stderr, "diskio: %s needs a value (try --help)\n", argv[a]);
                return 2;
            }
            if (argv[a][2] == 'o')
                op = v;
            else if (argv[a][2] == 'p')
                pattern = v;
            else
                dir = v;
            a++;
        } else if (strcmp(argv[a], "--buffered") == 0) {
            buffered = 1;
        } else if (strcmp(argv[a], "--block") == 0) {
            if (parse_u32("--block", v, ALIGN, 16u * MIB, &block) != 0)
                return 2;
            if (block % ALIGN != 0) {
                fprintf(stderr, "diskio: --block must be a multiple of 4096 (O_DIRECT alignment), "
                        "got %" PRIu32 "\n", block);
                return 2;
            }
            a++;
        } else if (strcmp(argv[a], "--mb") == 0) {
            if (parse_u32("--mb", v, 1u, 65536u, &mb) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--ops") == 0) {
            if (parse_u32("--ops", v, 1u, UINT32_MAX, &ops) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "diskio: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }
    if (op == NULL || (strcmp(op, "read") != 0 && strcmp(op, "write") != 0)) {
        fprintf(stderr, "diskio: --op must be read or write, got '%s'\n", op ? op : "");
        return 2;
    }
    if (pattern == NULL || (strcmp(pattern, "seq") != 0 && strcmp(pattern, "rand") != 0)) {
        fprintf(stderr, "diskio: --pattern must be seq or rand, got '%s'\n",
                pattern ? pattern : "");
        return 2;
    }
    struct stat st;
    if (dir == NULL || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "diskio: --dir must name an existing directory, got '%s'\n",
                dir ? dir : "");
        return 2;
    }
    const uint64_t file_bytes = (uint64_t)mb * MIB;
    if (file_bytes < block) {
        fprintf(stderr, "diskio: the file (--mb %" PRIu32 ") must hold at least one --block of "
                "%" PRIu32 " bytes\n", mb, block);
        return 2;
    }
    const int writing = strcmp(op, "write") == 0, rnd = strcmp(pattern, "rand") == 0;
    const uint64_t nblocks = file_bytes / block;

    struct disk d = {.fd = open_unlinked(dir), .direct = 0, .why_not = NULL};
    if (buffered)
        d.why_not = "--buffered asked for it";
    else
        try_direct(&d);
    if (rnd)
        (void)posix_fadvise(d.fd, 0, 0, POSIX_FADV_RANDOM);

    unsigned char *buf = aligned(block);
    for (uint32_t i = 0; i < block; i += 4) {
        uint32_t w = mix32(i);
        memcpy(buf + i, &w, 4);
    }
    const size_t chunk_len = block >= 4u * MIB ? block : 4u * MIB / block * block;
    unsigned char *chunk = aligned(chunk_len);
    memset(chunk, 0x5a, chunk_len);

    /* Everything but a sequential write starts from a complete file. */
    if (!(writing && !rnd)) {
        whole_file(&d, 1, chunk, chunk_len, block, nblocks);
        sync_and_evict(&d);
    }

    const uint64_t count = rnd ? ops : nblocks;
    uint64_t hash = 0;
    double t0 = now_s();
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t b = rnd ? random_block((uint32_t)i, nblocks) : i;
        if (writing) {
            stamp(buf, block, b, i + 2); /* generation 1 is the preparation pass */
            xfer(&d, 1, buf, block, b * block);
        } else {
            xfer(&d, 0, buf, block, b * block);
            hash = mix64(hash ^ check(buf, block, b) ^ (b << 20));
        }
    }
    if (writing && fdatasync(d.fd) != 0)
        die("fdatasync failed");
    double elapsed = now_s() - t0;

    if (writing) {
        if (!d.direct)
            (void)posix_fadvise(d.fd, 0, 0, POSIX_FADV_DONTNEED);
        hash = whole_file(&d, 0, chunk, chunk_len, block, nblocks);
    }
    close(d.fd);
    free(buf);
    free(chunk);

    const double bytes = (double)count * block;
    printf("test: %s-%s\n", pattern, op);
    if (d.direct)
        printf("direct: yes\n");
    else
        printf("direct: no (%s; buffered I/O with fdatasync and fadvise instead)\n", d.why_not);
    printf("file_mb: %" PRIu32 "\n", mb);
    printf("block: %" PRIu32 "\n", block);
    printf("requests: %" PRIu64 "\n", count);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mbs: %.2f\n", bytes / elapsed / 1e6);
    printf("iops: %.1f\n", (double)count / elapsed);
    /* The I/O mode leads the checksum: it is then stored with every sample,
     * and two ABIs measured in different modes count as a miscompare rather
     * than as a device-versus-page-cache "speed-up". */
    printf("checksum: %s-%s-%s-%" PRIu32 "-%" PRIu64 "-%016" PRIx64 "\n",
           d.direct ? "direct" : "buffered", pattern, op, block, count, hash);
    return 0;
}
