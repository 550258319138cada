/*
 * A clock that advances one microsecond per reading, preloaded (LD_PRELOAD) into a program
 * while abibench counts the instructions it executes.
 *
 * Programs print their own timings ("build_s: 0.123456", rates); formatting different numbers
 * takes a different number of instructions, so with the real clock two counts of one program
 * differ by a few hundred. With this clock every reading sequence is the same from run to run,
 * and so is the count. A counting run's times mean nothing (abibench never uses them), and a
 * program that loops until some time has passed would loop a different number of times here:
 * such workloads are not counted meaningfully with or without it.
 *
 * Replaced: clock_gettime, clock, gettimeofday, time (glibc's clock() and time() do not go
 * through the exported clock_gettime, so each is replaced itself).
 *
 * Such a program is told apart by how often it reads the clock: one that loops until a second
 * has passed reads it a million times here. A process that read it at least READS_TOLD times
 * writes the number to ABIBENCH_CLOCK_READS/reads.PID when it exits, so that abibench can say
 * the count measured a time-bound loop (below that, nothing runs but a comparison).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define READS_TOLD 1000000u /* one second of this clock's time */

static uint64_t ticks; /* microseconds since the program started, one per reading */

static uint64_t next_us(void)
{
#if __GCC_ATOMIC_LLONG_LOCK_FREE == 2
    return __atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
#else
    /* 32-bit PowerPC and MIPS o32 have no 64-bit atomic instructions: gcc would call
     * libatomic's __atomic_fetch_add_8, which a preloaded library cannot count on finding
     * (the program fails with "undefined symbol"). A byte lock guards the increment. */
    static unsigned char busy;
    while (__atomic_test_and_set(&busy, __ATOMIC_ACQUIRE))
        ;
    uint64_t us = ++ticks;
    __atomic_clear(&busy, __ATOMIC_RELEASE);
    return us;
#endif
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    uint64_t us = next_us();

    (void)id;
    ts->tv_sec = (time_t)(us / 1000000u); /* glibc declares ts non-null */
    ts->tv_nsec = (long)(us % 1000000u) * 1000L;
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    uint64_t us = next_us();

    (void)tz;
    tv->tv_sec = (time_t)(us / 1000000u); /* glibc declares tv non-null */
    tv->tv_usec = (suseconds_t)(us % 1000000u);
    return 0;
}

time_t time(time_t *out)
{
    time_t t = (time_t)(next_us() / 1000000u);

    if (out != NULL)
        *out = t;
    return t;
}

clock_t clock(void)
{
    return (clock_t)(next_us() * (CLOCKS_PER_SEC / 1000000));
}

__attribute__((destructor)) static void tell_reads(void)
{
    if (ticks < READS_TOLD)
        return;
    const char *dir = getenv("ABIBENCH_CLOCK_READS");
    char path[4096];
    if (dir == NULL || snprintf(path, sizeof path, "%s/reads.%ld", dir, (long)getpid())
                           >= (int)sizeof path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    dprintf(fd, "%llu\n", (unsigned long long)ticks);
    close(fd);
}
