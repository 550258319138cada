/*
 * threads: the thread tests of an XBench-style suite, chosen with --test.
 *
 *   compute  independent integer work spread over N threads (default: one per
 *            online CPU): measures how well the ABI's code and its threads
 *            use every core, with no sharing between threads.
 *   locks    N threads take one pthread mutex in turn to update shared state:
 *            under contention a mutex ends in futex system calls, and a
 *            32-bit process on a 64-bit kernel enters the kernel through the
 *            compat path, which is part of what the seed (004) saw.
 *
 * Checksums do not depend on the number of threads or on scheduling: compute
 * splits a fixed set of items among the threads and adds their results
 * (addition commutes), and locks checks the shared counter reached exactly
 * threads x locks and hashes the values 1..total, whoever produced them.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char micro_prog[] = "threads";
#include "micro.h"

#define MAX_THREADS 256

/* ---------------------------------------------------------------- compute */

struct compute_job {
    pthread_t tid;
    uint32_t first, stride, items, rounds;
    uint64_t sum;
    /* Keeps two workers' results off one cache line, so they do not share. */
    char pad[64];
};

static void *compute_worker(void *arg)
{
    struct compute_job *job = arg;
    uint64_t sum = 0;
    for (uint32_t i = job->first; i < job->items; i += job->stride) {
        uint32_t h = i;
        for (uint32_t r = 0; r < job->rounds; r++)
            h = mix32(h + r);
        sum += h;
    }
    job->sum = sum;
    return NULL;
}

/* ------------------------------------------------------------------ locks */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t shared_counter;
static uint64_t shared_hash;

struct lock_job {
    pthread_t tid;
    uint32_t locks;
    char pad[64];
};

static void *lock_worker(void *arg)
{
    struct lock_job *job = arg;
    for (uint32_t i = 0; i < job->locks; i++) {
        pthread_mutex_lock(&lock);
        uint32_t c = ++shared_counter;
        /* Addition commutes, so the total does not depend on which thread
         * happened to draw which counter value. */
        shared_hash += mix32(c);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void fail_thread(int rc)
{
    fprintf(stderr, "threads: cannot start a thread: %s\n", strerror(rc));
    exit(1);
}

static int test_compute(uint32_t threads, uint32_t items, uint32_t rounds)
{
    static struct compute_job jobs[MAX_THREADS];
    double t0 = now_s();
    for (uint32_t t = 0; t < threads; t++) {
        jobs[t] = (struct compute_job){.first = t, .stride = threads, .items = items,
                                       .rounds = rounds};
        int rc = pthread_create(&jobs[t].tid, NULL, compute_worker, &jobs[t]);
        if (rc != 0)
            fail_thread(rc);
    }
    uint64_t sum = 0;
    for (uint32_t t = 0; t < threads; t++) {
        pthread_join(jobs[t].tid, NULL);
        sum += jobs[t].sum;
    }
    double elapsed = now_s() - t0;
    double ops = (double)items * rounds;

    printf("test: compute\n");
    printf("threads: %" PRIu32 "\n", threads);
    printf("items: %" PRIu32 "\n", items);
    printf("rounds: %" PRIu32 "\n", rounds);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mops: %.3f\n", ops / elapsed / 1e6);
    printf("checksum: %016" PRIx64 "\n", mix64(sum ^ ((uint64_t)items << 32 | rounds)));
    return 0;
}

static int test_locks(uint32_t threads, uint32_t locks)
{
    static struct lock_job jobs[MAX_THREADS];
    double t0 = now_s();
    for (uint32_t t = 0; t < threads; t++) {
        jobs[t] = (struct lock_job){.locks = locks};
        int rc = pthread_create(&jobs[t].tid, NULL, lock_worker, &jobs[t]);
        if (rc != 0)
            fail_thread(rc);
    }
    for (uint32_t t = 0; t < threads; t++)
        pthread_join(jobs[t].tid, NULL);
    double elapsed = now_s() - t0;
    uint64_t total = (uint64_t)threads * locks;

    if (shared_counter != (uint32_t)total) {
        fprintf(stderr, "threads: lock test lost updates: counter %" PRIu32 ", expected %" PRIu64
                "\n", shared_counter, total);
        return 1;
    }
    printf("test: locks\n");
    printf("threads: %" PRIu32 "\n", threads);
    printf("locks_per_thread: %" PRIu32 "\n", locks);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("mlocks: %.3f\n", (double)total / elapsed / 1e6);
    /* The thread count is left out so that the same total work checks the
     * same on any split of it. */
    printf("checksum: %016" PRIx64 "\n", mix64(shared_hash ^ total));
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: threads --test compute|locks [options]\n"
            "  --threads N  worker threads, 0 = one per online CPU (default 0, at most %d)\n"
            "  --items N    compute: independent work items (default 200000)\n"
            "  --rounds N   compute: mixing rounds per item (default 2000)\n"
            "  --locks N    locks: lock/unlock pairs per thread (default 2000000)\n",
            MAX_THREADS);
}

int main(int argc, char **argv)
{
    const char *test = NULL;
    uint32_t threads = 0, items = 200000u, rounds = 2000u, locks = 2000000u;

    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--test") == 0) {
            if (v == NULL) {
                fprintf(stderr, "threads: --test needs a name: compute or locks\n");
                return 2;
            }
            test = v;
            a++;
        } else if (strcmp(argv[a], "--threads") == 0) {
            if (parse_u32("--threads", v, 0u, MAX_THREADS, &threads) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--items") == 0) {
            if (parse_u32("--items", v, 1u, UINT32_MAX, &items) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--rounds") == 0) {
            if (parse_u32("--rounds", v, 1u, UINT32_MAX, &rounds) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--locks") == 0) {
            if (parse_u32("--locks", v, 1u, UINT32_MAX, &locks) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "threads: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n < 1 ? 1u : n > MAX_THREADS ? MAX_THREADS : (uint32_t)n;
    }
    if (test == NULL) {
        fprintf(stderr, "threads: say which test to run: --test compute or locks\n");
        return 2;
    }
    if (strcmp(test, "compute") == 0)
        return test_compute(threads, items, rounds);
    if (strcmp(test, "locks") == 0) {
        if ((uint64_t)threads * locks > UINT32_MAX) {
            fprintf(stderr, "threads: --threads x --locks must stay below 2^32 (the shared "
                    "counter is 32-bit); lower --locks\n");
            return 2;
        }
        return test_locks(threads, locks);
    }
    fprintf(stderr, "threads: unknown test '%s': choose compute or locks\n", test);
    return 2;
}
