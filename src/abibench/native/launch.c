/*
 * abibench's sample launcher: spawn, wait4, report.
 *
 * Why a C program and not Python's os.wait4: Linux seeds a child's ru_maxrss
 * with the parent's resident high-water mark at exec time, so a 30 MB Python
 * parent makes a 2 MB program look like 30 MB.  This launcher is a few hundred
 * kilobytes, so what it reports is the measured program's own peak.
 *
 * Usage: abibench-launch RESULT_FILE TIMEOUT_MS PROGRAM [ARG...]   (PROGRAM: a path, no PATH search)
 * The program inherits stdin/stdout/stderr and the environment, runs in its own
 * process group (so a timeout or Ctrl-C kills everything it started), and the
 * launcher writes one line of key=value pairs to RESULT_FILE:
 *   status=exited|signaled|timeout|interrupted|execfail code=N signal=N
 *   wall_ns=N user_us=N sys_us=N maxrss_kb=N minflt=N majflt=N nvcsw=N nivcsw=N errno=N
 * Exit status: 0 when the result was written, 125 on a launcher error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_timeout = 0;
static volatile sig_atomic_t got_interrupt = 0;

static void on_alarm(int sig) { (void)sig; got_timeout = 1; }
static void on_interrupt(int sig) { (void)sig; got_interrupt = 1; }

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t tv_us(struct timeval tv) { return (int64_t)tv.tv_sec * 1000000LL + tv.tv_usec; }

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s RESULT_FILE TIMEOUT_MS PROGRAM [ARG...]\n", argv[0]);
        return 125;
    }
    const char *result_path = argv[1];
    char *end = NULL;
    long long timeout_ms = strtoll(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || timeout_ms < 0) {
        fprintf(stderr, "abibench-launch: bad TIMEOUT_MS '%s'\n", argv[2]);
        return 125;
    }
    FILE *out = fopen(result_path, "w");
    if (!out) {
        fprintf(stderr, "abibench-launch: cannot write %s: %s\n", result_path, strerror(errno));
        return 125;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_interrupt;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    /* posix_spawn rather than fork+exec: glibc spawns with a vfork-style clone, which costs
     * less per sample than copying page tables, reports exec errors directly, and (unlike
     * execvp) never retries an ENOEXEC file through /bin/sh, so "kernel cannot run x32"
     * stays an exec error instead of becoming a shell syntax error. */
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0); /* its own group: a timeout kills all it started */
    sigset_t defaults, empty;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGALRM);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    sigemptyset(&empty);
    posix_spawnattr_setsigmask(&attr, &empty);

    int64_t t0 = now_ns();
    pid_t pid = 0;
    int exec_errno = posix_spawn(&pid, argv[3], NULL, &attr, &argv[3], environ);
    posix_spawnattr_destroy(&attr);
    if (exec_errno != 0) {
        int64_t t1 = now_ns();
        fprintf(out,
                "status=execfail code=127 signal=0 wall_ns=%lld user_us=0 sys_us=0 maxrss_kb=0 "
                "minflt=0 majflt=0 nvcsw=0 nivcsw=0 errno=%d\n",
                (long long)(t1 - t0), exec_errno);
        return fclose(out) == 0 ? 0 : 125;
    }

    if (timeout_ms > 0) {
        struct itimerval it;
        memset(&it, 0, sizeof it);
        it.it_value.tv_sec = (time_t)(timeout_ms / 1000);
        it.it_value.tv_usec = (suseconds_t)((timeout_ms % 1000) * 1000);
        setitimer(ITIMER_REAL, &it, NULL);
    }

    int status = 0;
    struct rusage ru;
    const char *what = NULL;
    for (;;) {
        pid_t w = wait4(pid, &status, 0, &ru);
        if (w == pid) break;
        if (w < 0 && errno == EINTR) {
            if (got_timeout && !what) { what = "timeout"; kill(-pid, SIGKILL); }
            if (got_interrupt && !what) { what = "interrupted"; kill(-pid, SIGKILL); }
            continue;
        }
        perror("abibench-launch: wait4");
        kill(-pid, SIGKILL);
        return 125;
    }
    int64_t t1 = now_ns();
    /* Anything the program left behind in its group goes with it. */
    kill(-pid, SIGKILL);

    int code = -1, sig = 0;
    if (WIFEXITED(status)) code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) sig = WTERMSIG(status);
    if (!what) what = WIFSIGNALED(status) ? "signaled" : "exited";
    fprintf(out,
            "status=%s code=%d signal=%d wall_ns=%lld user_us=%lld sys_us=%lld maxrss_kb=%ld "
            "minflt=%ld majflt=%ld nvcsw=%ld nivcsw=%ld errno=%d\n",
            what, code, sig, (long long)(t1 - t0), (long long)tv_us(ru.ru_utime),
            (long long)tv_us(ru.ru_stime), ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt, ru.ru_nvcsw,
            ru.ru_nivcsw, 0);
    if (fclose(out) != 0) { perror("abibench-launch: result"); return 125; }
    return 0;
}
