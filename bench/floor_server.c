/*
 * bench/harness_floor.py's "kept-alive" variant: a launcher that stays alive and starts the
 * program once per request line on its standard input, as a long-lived launcher fed sample
 * requests over a pipe would.  It starts the program as native/launch.c does (vfork, its own
 * process group, no signal blocked, execve) and waits for it as launch.c does (wait4 with
 * WNOHANG, then sigtimedwait for SIGCHLD), and answers each request with one line:
 *   wall_ns user_us sys_us minflt status
 * (the wall time from the vfork to the reap, the program's own rusage, its wait status).
 * With -s it never sleeps while the program runs: it polls wait4 with WNOHANG, so its CPU is
 * never idle and the reap needs no wake-up of an idle CPU (a diagnosis of what a quiet machine
 * adds, not a way to measure: the spinning takes a CPU from the program).
 * An experiment, not abibench's launcher: no timeout, no cleanup of descendants.
 *
 * Usage: floor-server [-s] PROGRAM [ARG...]   (PROGRAM: a path)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    int spin = argc > 1 && strcmp(argv[1], "-s") == 0;
    argv += spin;
    argc -= spin;
    if (argc < 2) {
        fprintf(stderr, "usage: floor-server [-s] PROGRAM [ARG...]\n");
        return 2;
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        int64_t t0 = now_ns();
        pid_t pid = vfork();
        if (pid == 0) {
            setpgid(0, 0);
            sigset_t none;
            sigemptyset(&none);
            sigprocmask(SIG_SETMASK, &none, NULL);
            execve(argv[1], &argv[1], environ);
            _exit(127);
        }
        if (pid < 0) return 1;
        int st = 0;
        struct rusage ru;
        for (;;) {
            pid_t w = wait4(-1, &st, WNOHANG, &ru);
            if (w == pid) break;
            if (w < 0 && errno != EINTR) return 1;
            if (!spin) sigwaitinfo(&chld, NULL);
        }
        int64_t t1 = now_ns();
        printf("%lld %lld %lld %ld %d\n", (long long)(t1 - t0),
               (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
               (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_minflt, st);
        fflush(stdout);
    }
    return 0;
}
