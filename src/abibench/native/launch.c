/*
 * abibench's sample launcher: spawn, wait4, clean up, report.
 *
 * Why a C program and not Python's os.wait4: Linux seeds a child's ru_maxrss
 * with the parent's resident high-water mark at exec time, so a 30 MB Python
 * parent makes a 2 MB program look like 30 MB.  This launcher is a few hundred
 * kilobytes, so what it reports is the measured program's own peak.
 *
 * Usage: abibench-launch [-c CPU] [-r REPEAT] [-g FD] [-v CPU:ITERS] [-m CGROUP]
 *                        RESULT_FILE TIMEOUT_MS PROGRAM [ARG...]   (PROGRAM: a path, no PATH search)
 *   -c CPU       pin the program (and the launcher) to this CPU
 *   -r REPEAT    run the program REPEAT times back to back (a short program's sample); only the
 *                first run's stdout is kept, the others' goes to /dev/null; stdin, a regular
 *                file, is rewound for each run.  The first run that fails ends the sample.
 *   -g FD        wait for end-of-file on FD before starting: the caller starts two launchers
 *                and closes the pipe's other end, and both programs start at the same moment
 *   -v CPU:ITERS the covariate: while the program runs, a thread pinned to CPU runs chunks of
 *                ITERS iterations of a fixed integer loop; how many it completed tells how fast
 *                the machine was during this very sample
 *   -m CGROUP    a memory cgroup directory made for this sample (v1 or v2): the launcher joins
 *                it before the program starts, so the program's whole process tree is born
 *                inside; when the program ends, every other process of the group is killed,
 *                and the group's peak memory (v2 memory.peak, v1 memory.max_usage_in_bytes:
 *                everything charged to the group, page cache included) is reported as
 *                tree_peak_kb.  The launcher's own charges after it joined are a few pages.
 * The program inherits stdin/stdout/stderr and the environment, runs in its own
 * process group (so a timeout or Ctrl-C kills everything it started), and the
 * launcher writes one line of key=value pairs to RESULT_FILE:
 *   status=exited|signaled|timeout|interrupted|execfail code=N signal=N
 *   wall_ns=N user_us=N sys_us=N maxrss_kb=N minflt=N majflt=N nvcsw=N nivcsw=N errno=N
 *   escaped=N repeat=N t0_ns=N t1_ns=N busy_ticks=N steal_ticks=N hz=N cov_iters=N cov_ns=N
 *   (then tree_peak_kb=N subreaper=0|1: 0 when the kernel or emulator refused it)
 *   stops=N: how often the program was stopped (SIGSTOP, SIGTSTP...) while it ran
 *   tree_peak_kb=N (-1 without -m, or when the group's peak could not be read)
 * wall_ns and the rusage are summed over the runs (the caller divides by repeat); maxrss_kb is
 * the largest.  wall_ns covers spawn to reap of each run and nothing of the launcher's own work,
 * as hyperfine measures.  t0_ns/t1_ns are CLOCK_MONOTONIC at the first spawn and the last reap;
 * busy_ticks and steal_ticks are the whole machine's busy and stolen CPU time over the sample
 * (/proc/stat, in 1/hz s), from which the caller subtracts the program's own.
 * Exit status: 0 when the result was written, 125 on a launcher error.
 *
 * Nothing of a sample outlives it:
 * - the launcher is a child subreaper, so whatever leaves the program's process group
 *   (setsid, double fork) is re-parented to the launcher instead of init; when the program
 *   ends, its group and then every remaining descendant are killed and reaped.  escaped=N
 *   counts the descendants that were still alive then (on a timeout or an interrupt, those
 *   outside the group that was killed with the program).  The rusage stays the program's own.
 * - the launcher dies with its parent: PR_SET_PDEATHSIG delivers SIGTERM (an interrupt) when
 *   abibench dies, even by SIGKILL.  ABIBENCH_LAUNCH_PARENT, when set, is the PID the parent
 *   expects to be: if the parent died before the prctl, getppid() differs and the launcher
 *   runs nothing.  The variable is removed before the program starts, so the program's
 *   environment is exactly the one abibench chose.
 * SIGINT, SIGTERM and SIGHUP mean "interrupted": the program is killed and reported so.
 * SIGUSR1 means "stopped": the caller is done with the program (a browser whose page failed,
 * say) and it is killed the same way, reported as status=stopped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PARENT_ENV "ABIBENCH_LAUNCH_PARENT"
#define CLEANUP_DEADLINE_NS (10LL * 1000000000LL) /* a process stuck in D state is not waited out */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t tv_us(struct timeval tv) { return (int64_t)tv.tv_sec * 1000000LL + tv.tv_usec; }

static struct timespec ns_to_ts(int64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    return ts;
}

extern char **environ;

/* ---- descendants, found through /proc/PID/task/TID/children -------------------------- */

typedef struct {
    pid_t *v;
    size_t n, cap;
} pidset;

static int pidset_has(const pidset *s, pid_t p) {
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == p) return 1;
    return 0;
}

static void pidset_add(pidset *s, pid_t p) {
    if (pidset_has(s, p)) return;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        pid_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) return; /* out of memory: this one is found again on the next pass */
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = p;
}

/* State (third field) and process group (fifth) of a process; 0 when it is gone. */
static char proc_state(pid_t p, pid_t *pgrp) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) return 0;
    buf[len] = '\0';
    char *close_paren = strrchr(buf, ')'); /* the command name may hold anything */
    char state = 0;
    int ppid = 0, group = 0;
    if (!close_paren || sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &group) != 3) return 0;
    if (pgrp) *pgrp = (pid_t)group;
    return state;
}

/* Every child of p, over all its threads (a child belongs to the thread that forked it).
 * -1 when the kernel has no children files (CONFIG_PROC_CHILDREN). */
static int add_children(pid_t p, pidset *out) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)p);
    DIR *tasks = opendir(path);
    if (!tasks) return 0; /* gone meanwhile */
    int opened = 0, seen = 0;
    struct dirent *t;
    while ((t = readdir(tasks)) != NULL) {
        if (t->d_name[0] == '.') continue;
        seen++;
        char cpath[320];
        snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)p, t->d_name);
        FILE *f = fopen(cpath, "re");
        if (!f) continue;
        opened++;
        int c;
        while (fscanf(f, "%d", &c) == 1) pidset_add(out, (pid_t)c);
        fclose(f);
    }
    closedir(tasks);
    return seen > 0 && opened == 0 && errno == ENOENT ? -1 : 0;
}

/* Parent (fourth field of /proc/PID/stat) of a process; 0 when it is gone. */
static pid_t proc_parent(pid_t p) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) return 0;
    buf[len] = '\0';
    char *close_paren = strrchr(buf, ')');
    char state;
    int ppid = 0;
    if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return 0;
    return (pid_t)ppid;
}

/* Without children files: every process of /proc whose parent is in the set, to a fixpoint. */
static void scan_descendants(pidset *out) {
    size_t before;
    do {
        before = out->n;
        DIR *proc = opendir("/proc");
        if (!proc) return;
        struct dirent *e;
        while ((e = readdir(proc)) != NULL) {
            char *rest = NULL;
            long p = strtol(e->d_name, &rest, 10);
            if (p <= 0 || *rest != '\0') continue;
            pid_t pp = proc_parent((pid_t)p);
            if (pp == getpid() || (pp > 0 && pidset_has(out, pp))) pidset_add(out, (pid_t)p);
        }
        closedir(proc);
    } while (out->n != before);
}

/* All descendants of the launcher, breadth first: the set grows while it is walked. */
static void descendants(pidset *out) {
    out->n = 0;
    errno = 0;
    if (add_children(getpid(), out) < 0) {
        scan_descendants(out);
        return;
    }
    for (size_t i = 0; i < out->n; i++) add_children(out->v[i], out);
}

/* Reap every child that has ended; 1 while some child is left, 0 when none is. */
static int reap_ready(void) {
    for (;;) {
        pid_t w = waitpid(-1, NULL, WNOHANG);
        if (w > 0) continue;
        if (w == 0) return 1;
        if (errno == EINTR) continue;
        return 0; /* ECHILD */
    }
}

/* After the program has been reaped: kill its group and every descendant left, until nothing
 * of the sample is alive.  Returns how many were alive to be killed; with `skip_group`, the
 * members of `group` (already killed together with the program) are not counted.
 * Strays are counted before anything is killed, so a count does not depend on how fast a
 * SIGKILL takes effect. */
static int kill_the_rest(pid_t group, int skip_group, const sigset_t *chld) {
    pidset found = {0}, alive = {0}, counted = {0};
    int64_t deadline = now_ns() + CLEANUP_DEADLINE_NS;
    /* No child left means no descendant left: an orphan is re-parented to us, the subreaper,
     * so a sample that left nothing behind costs one waitpid here. */
    while (reap_ready()) {
        descendants(&found);
        alive.n = 0;
        int group_left = 0;
        for (size_t i = 0; i < found.n; i++) {
            pid_t p = found.v[i], pg = 0;
            char st = proc_state(p, &pg);
            if (st == 0 || st == 'Z' || st == 'X') continue;
            pidset_add(&alive, p);
            group_left |= pg == group;
            if (!(skip_group && pg == group)) pidset_add(&counted, p);
        }
        /* Only what this pass found, and the group only while a member holds its ID: a PID
         * that was reaped may belong to someone else now. */
        if (group_left) kill(-group, SIGKILL);
        for (size_t i = 0; i < alive.n; i++) kill(alive.v[i], SIGKILL);
        if (!reap_ready()) break;
        int64_t left = deadline - now_ns();
        if (left <= 0) {
            fprintf(stderr, "abibench-launch: descendants still alive after SIGKILL\n");
            break;
        }
        /* A killed child ends with a SIGCHLD; a stray's own children are re-parented to us
         * when it dies, and the next pass finds them. */
        struct timespec ts = ns_to_ts(left < 100000000LL ? left : 100000000LL);
        sigtimedwait(chld, NULL, &ts);
    }
    int n = (int)counted.n;
    free(found.v);
    free(alive.v);
    free(counted.v);
    return n;
}

/* ---- the sample's memory cgroup (-m) ------------------------------------------------------ */

static int write_text(const char *dir, const char *file, const char *text) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t len = (ssize_t)strlen(text);
    ssize_t n = write(fd, text, (size_t)len);
    int saved = errno;
    close(fd);
    errno = saved;
    return n == len ? 0 : -1;
}

/* A whole number from a file of the group; -1 when it cannot be read. */
static long long read_number(const char *dir, const char *file) {
    char path[4096], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) return -1;
    buf[len] = '\0';
    char *end = NULL;
    long long v = strtoll(buf, &end, 10);
    return end == buf ? -1 : v;
}

/* The group's high-water mark in KiB: v2 memory.peak, else v1 memory.max_usage_in_bytes. */
static long long group_peak_kb(const char *dir) {
    long long bytes = read_number(dir, "memory.peak");
    if (bytes < 0) bytes = read_number(dir, "memory.max_usage_in_bytes");
    return bytes < 0 ? -1 : bytes / 1024;
}

/* Kill every process of the group but the launcher until none is left (or the deadline).
 * After kill_the_rest nothing should be there: what a PID namespace's init re-parented away
 * from us, or anything that joined the group itself, is found here.  Returns how many. */
static int kill_group_members(const char *dir, const sigset_t *chld) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    int64_t deadline = now_ns() + CLEANUP_DEADLINE_NS;
    pidset killed = {0};
    for (;;) {
        FILE *f = fopen(path, "re");
        if (!f) break;
        int p, others = 0;
        while (fscanf(f, "%d", &p) == 1) {
            if (p == getpid()) continue;
            others++;
            pidset_add(&killed, (pid_t)p);
            kill((pid_t)p, SIGKILL);
        }
        fclose(f);
        reap_ready();
        if (!others) break;
        if (now_ns() >= deadline) {
            fprintf(stderr, "abibench-launch: processes of %s still alive after SIGKILL\n", dir);
            break;
        }
        struct timespec ts = ns_to_ts(10000000LL); /* a killed process leaves the group at exit */
        sigtimedwait(chld, NULL, &ts);
    }
    int n = (int)killed.n;
    free(killed.v);
    return n;
}

/* ---- the machine around the sample ----------------------------------------------------- */

/* Busy (user+nice+system+irq+softirq) and stolen ticks of all CPUs; 0s when unreadable. */
static void cpu_ticks(long long *busy, long long *steal) {
    *busy = *steal = 0;
    char buf[512];
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) return;
    buf[len] = '\0';
    long long v[8] = {0};
    if (sscanf(buf, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) < 7)
        return;
    *busy = v[0] + v[1] + v[2] + v[5] + v[6];
    *steal = v[7];
}

static int pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

/* The covariate loop: the same dependent recurrence as the noise probe (native/calibrate.c). */
typedef struct {
    int cpu;
    long iters;
    atomic_long chunks;
    atomic_int stop;
    atomic_int ready;
    uint64_t sink;
} covariate;

static void *covariate_loop(void *arg) {
    covariate *c = arg;
    int pinned = pin_to(c->cpu) == 0;
    atomic_store(&c->ready, pinned ? 1 : -1);
    if (!pinned) return NULL;
    uint64_t x = 88172645463325252ULL;
    while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
        for (long i = 0; i < c->iters; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            x ^= x >> 29;
        }
        atomic_fetch_add_explicit(&c->chunks, 1, memory_order_relaxed);
    }
    c->sink = x;
    return NULL;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* ---- main ------------------------------------------------------------------------------ */

/* What the command line asks for. */
typedef struct {
    long long pin_cpu, repeat, gate_fd, cov_cpu, cov_iters, timeout_ms;
    int start_here; /* -s: start the program on the launcher's CPU, free from there on */
    const char *cgroup_dir;
    const char *result_path;
    char **program; /* PROGRAM [ARG...] */
} options;

/* What the sample measured, summed over its runs, and what the result line reports. */
typedef struct {
    int64_t t_first, t1, wall;
    int status, escaped, exec_errno, stops, stop_seen, subreaper;
    long long runs, busy, steal, tree_peak_kb;
    long cov_chunks;
    int64_t cov_ns;
    struct rusage ru_sum;
    const char *what;
} sample;

/* The options and operands; 0, or 125 with the reason on stderr. */
static int parse_options(int argc, char **argv, options *o) {
    *o = (options){.pin_cpu = -1, .repeat = 1, .gate_fd = -1, .cov_cpu = -1};
    int opt;
    while ((opt = getopt(argc, argv, "+c:r:g:v:m:s")) != -1) {
        char *colon;
        switch (opt) {
        case 'c':
            if (parse_int(optarg, 0, CPU_SETSIZE - 1, &o->pin_cpu) == 0) continue;
            break;
        case 'r':
            if (parse_int(optarg, 1, 1000000, &o->repeat) == 0) continue;
            break;
        case 'g':
            if (parse_int(optarg, 0, 1 << 20, &o->gate_fd) == 0) continue;
            break;
        case 's':
            o->start_here = 1;
            continue;
        case 'm':
            if (optarg[0] == '/') {
                o->cgroup_dir = optarg;
                continue;
            }
            break;
        case 'v':
            colon = strchr(optarg, ':');
            if (colon) {
                *colon = '\0';
                if (parse_int(optarg, 0, CPU_SETSIZE - 1, &o->cov_cpu) == 0 &&
                    parse_int(colon + 1, 1, 1LL << 40, &o->cov_iters) == 0)
                    continue;
            }
            break;
        }
        fprintf(stderr, "abibench-launch: bad option -%c\n", optopt ? optopt : opt);
        return 125;
    }
    argc -= optind - 1;
    argv += optind - 1;
    if (argc < 4) {
        fprintf(stderr, "usage: abibench-launch [-c CPU] [-r REPEAT] [-g FD] [-v CPU:ITERS] "
                        "[-m CGROUP] [-s] RESULT_FILE TIMEOUT_MS PROGRAM [ARG...]\n");
        return 125;
    }
    o->result_path = argv[1];
    if (parse_int(argv[2], 0, 1LL << 50, &o->timeout_ms) != 0) {
        fprintf(stderr, "abibench-launch: bad TIMEOUT_MS '%s'\n", argv[2]);
        return 125;
    }
    o->program = &argv[3];
    return 0;
}

/* Signals are taken synchronously with sigtimedwait: blocked from here on, one that
 * arrives before the program is spawned stays pending and is seen by the wait loop. */
static void block_signals(sigset_t *waited, sigset_t *chld) {
    sigemptyset(waited);
    sigaddset(waited, SIGCHLD);
    sigaddset(waited, SIGINT);
    sigaddset(waited, SIGTERM);
    sigaddset(waited, SIGHUP);
    sigaddset(waited, SIGUSR1);
    sigprocmask(SIG_BLOCK, waited, NULL);
    sigemptyset(chld);
    sigaddset(chld, SIGCHLD);
    /* An inherited SIG_IGN for SIGCHLD would let the kernel reap the program before wait4. */
    signal(SIGCHLD, SIG_DFL);
}

/* Dies with its parent, catches what leaves the program's group, starts nothing for a parent
 * that is already gone; 0, or 125. */
static int tie_to_parent(int *subreaper) {
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0) {
        perror("abibench-launch: prctl");
        return 125;
    }
    /* qemu-user refuses the subreaper with EINVAL (abibench itself emulated: an arm64 root or
     * container on an x86 machine).  The program's process group is still killed when it
     * ends; what leaves the group cannot be caught, and the result line says so. */
    *subreaper = 1;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        if (errno != EINVAL) {
            perror("abibench-launch: prctl");
            return 125;
        }
        *subreaper = 0;
    }
    const char *expected = getenv(PARENT_ENV);
    if (expected) {
        if (strtol(expected, NULL, 10) != (long)getppid()) {
            fprintf(stderr, "abibench-launch: parent %s is gone; not starting\n", expected);
            return 125;
        }
        unsetenv(PARENT_ENV);
    }
    return 0;
}

/* ---- starting the program ------------------------------------------------------------ */

/* The program, started as posix_spawn with POSIX_SPAWN_SETPGROUP | SETSIGDEF | SETSIGMASK
 * would: in its own process group, with the signals in `reset` at their default, none blocked,
 * stdout on /dev/null when `quiet` (a repeat).  Not posix_spawn itself: glibc's child queries
 * and resets all 64 signal dispositions (about 130 system calls) between the clone and the
 * exec, inside the sample's timed window, where this child makes 3 to 6 (issue 30: the
 * harness floor).  vfork: the parent sleeps until the exec, as glibc's clone(CLONE_VFORK)
 * does; the child writes nothing of the parent's memory but `failed` (how an exec error gets
 * back, as posix_spawn returns it) and calls only system calls.  execve, never execvp: an
 * ENOEXEC file is never retried through /bin/sh.  Returns 0 or the errno of the failure. */
static int spawn_program(pid_t *pid_out, char *const argv[], const sigset_t *reset, int quiet) {
    volatile int failed = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        if (setpgid(0, 0) != 0) {
            failed = errno;
            _exit(127);
        }
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; sig++)
            if (sigismember(reset, sig) == 1) sigaction(sig, &dfl, NULL);
        if (quiet) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd < 0 || (fd != STDOUT_FILENO && dup2(fd, STDOUT_FILENO) < 0)) {
                failed = errno;
                _exit(127);
            }
            if (fd != STDOUT_FILENO) close(fd);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(argv[0], argv, environ);
        failed = errno ? errno : ENOEXEC;
        _exit(127);
    }
    if (pid < 0) return errno;
    if (failed) {
        int err = failed;
        waitpid(pid, NULL, 0); /* the child that could not exec: reaped here, as glibc does */
        return err;
    }
    *pid_out = pid;
    return 0;
}

/* The signals the launcher takes (and SIGALRM, SIGCHLD) start at their default in the
 * program, whatever the launcher inherited; only those not at their default already are
 * reset in the child (none, usually): the asking is done here, outside the timed window. */
static void spawn_setup(sigset_t *reset) {
    sigemptyset(reset);
    const int defaults[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGALRM, SIGCHLD};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        struct sigaction now;
        if (sigaction(defaults[i], NULL, &now) != 0 || now.sa_handler != SIG_DFL)
            sigaddset(reset, defaults[i]);
    }
}

/* Start here (-s, a sample alone): the launcher holds the CPU it runs on while it forks and the
 * child execs, so the kernel starts the program there (the fork's and the exec's balancing
 * both moved it to the other, idle CPU: on this VM an idle vCPU is halted, and waking it, then
 * the launcher's CPU again at the reap, was about 0.07 + 0.04 ms of a 1 ms sample, quiet,
 * where hyperfine's child stays on its CPU; bench/harness_trace.py, docs/method.md §5).  The
 * launcher gives the program its own mask back as soon as the exec is done (run_program), so
 * the program is never pinned.  That must happen before the program runs a single instruction
 * of its own, or a child it forks at once inherits the held mask (the gate found a shell's
 * first child pinned under load): so the launcher holds as a real-time thread, which the
 * exec's wake-up of the vfork parent lets run before the program on the CPU they share.
 * SCHED_RESET_ON_FORK gives the program the ordinary policy, as it would have had.  Without
 * the right to a real-time policy nothing is held.  1 when held (free_mask is the mask to give
 * back), 0 when nothing is (one CPU allowed, or no real-time policy). */
static int hold_cpu(cpu_set_t *free_mask) {
    int cpu = sched_getcpu();
    if (cpu < 0 || sched_getaffinity(0, sizeof *free_mask, free_mask) != 0) return 0;
    if (CPU_COUNT(free_mask) < 2 || !CPU_ISSET(cpu, free_mask)) return 0;
    struct sched_param rt = {.sched_priority = 1};
    if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt) != 0) return 0;
    if (pin_to(cpu) != 0) {
        struct sched_param other = {.sched_priority = 0};
        sched_setscheduler(0, SCHED_OTHER, &other);
        return 0;
    }
    return 1;
}

/* The covariate thread started and at speed; 0, or 125. */
static int start_covariate(covariate *cov, pthread_t *thread, int *started) {
    if (pthread_create(thread, NULL, covariate_loop, cov) != 0) {
        fprintf(stderr, "abibench-launch: cannot start the covariate loop\n");
        return 125;
    }
    *started = 1;
    /* Until its first chunk is done, the loop is not at speed yet. */
    while (atomic_load(&cov->ready) == 0 || (atomic_load(&cov->ready) > 0 &&
                                              atomic_load(&cov->chunks) < 1))
        sched_yield();
    if (atomic_load(&cov->ready) < 0) {
        fprintf(stderr, "abibench-launch: cannot pin the covariate loop to CPU %d\n", cov->cpu);
        return 125;
    }
    return 0;
}

/* Both launchers of a simultaneous pair get here, then start together at EOF. */
static void wait_for_gate(int fd) {
    char byte;
    for (;;) {
        ssize_t n = read(fd, &byte, 1);
        if (n > 0 || (n < 0 && errno == EINTR)) continue;
        break;
    }
    close(fd);
}

/* Reaps whatever ended (the program, and any stray re-parented to us, the subreaper): 1 when
 * the program itself did (its status and rusage, the only ones reported), 0 when not yet,
 * -1 on a wait4 error.  Stops of the program are counted in s. */
static int reap(pid_t pid, sample *s, struct rusage *ru) {
    int st = 0, done = 0;
    struct rusage r;
    pid_t w;
    /* WUNTRACED: a stop of the program (SIGSTOP, SIGTSTP, SIGTTIN/OU) is reported
     * too, and counted: its wall time then holds the time it stood still, so the
     * caller stores the sample as no measurement.  A stop the program was continued
     * from before we looked is reported only as its SIGCONT (WCONTINUED, which the
     * kernel reports only for a process that was stopped): that counts as well. */
    while ((w = wait4(-1, &st, WNOHANG | WUNTRACED | WCONTINUED, &r)) > 0) {
        if (WIFSTOPPED(st) || WIFCONTINUED(st)) {
            if (w == pid && WIFSTOPPED(st)) { s->stops++; s->stop_seen = 1; }
            if (w == pid && WIFCONTINUED(st)) {
                if (!s->stop_seen) s->stops++;
                s->stop_seen = 0;
            }
            continue;
        }
        if (w == pid) { s->status = st; *ru = r; done = 1; }
    }
    if (done) return 1;
    return w < 0 && errno != EINTR ? -1 : 0;
}

/* Waits for the program to end, killing its group on the deadline, an interrupt or SIGUSR1
 * (s->what says which); 0, or 125 on a wait4 error. */
static int wait_program(pid_t pid, sample *s, struct rusage *ru, const sigset_t *waited,
                        int64_t deadline) {
    for (;;) {
        int reaped = reap(pid, s, ru);
        if (reaped > 0) return 0;
        if (reaped < 0) {
            perror("abibench-launch: wait4");
            kill(-pid, SIGKILL);
            return 125;
        }
        struct timespec ts, *tsp = NULL;
        if (deadline && !s->what) {
            int64_t left = deadline - now_ns();
            ts = ns_to_ts(left > 0 ? left : 0);
            tsp = &ts;
        }
        int sig = sigtimedwait(waited, NULL, tsp);
        if (sig < 0 && errno == EAGAIN && !s->what) {
            s->what = "timeout";
            kill(-pid, SIGKILL);
        } else if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !s->what) {
            s->what = "interrupted";
            kill(-pid, SIGKILL);
        } else if (sig == SIGUSR1 && !s->what) {
            s->what = "stopped";
            kill(-pid, SIGKILL);
        }
    }
}

static void add_rusage(struct rusage *sum, const struct rusage *ru) {
    sum->ru_utime.tv_sec += ru->ru_utime.tv_sec;
    sum->ru_utime.tv_usec += ru->ru_utime.tv_usec;
    sum->ru_stime.tv_sec += ru->ru_stime.tv_sec;
    sum->ru_stime.tv_usec += ru->ru_stime.tv_usec;
    if (ru->ru_maxrss > sum->ru_maxrss) sum->ru_maxrss = ru->ru_maxrss;
    sum->ru_minflt += ru->ru_minflt;
    sum->ru_majflt += ru->ru_majflt;
    sum->ru_nvcsw += ru->ru_nvcsw;
    sum->ru_nivcsw += ru->ru_nivcsw;
}

/* The program run o->repeat times (or until a run fails, times out or is interrupted);
 * 0, or 125 on a launcher error. */
static int run_program(const options *o, sample *s, const sigset_t *reset,
                       const sigset_t *waited, const sigset_t *chld, const cpu_set_t *free_mask) {
    int64_t t0 = now_ns();
    s->t_first = s->t1 = t0;
    int64_t deadline = o->timeout_ms > 0 ? t0 + (int64_t)o->timeout_ms * 1000000LL : 0;
    for (long long run = 0; run < o->repeat && !s->what; run++) {
        if (run > 0 && lseek(STDIN_FILENO, 0, SEEK_SET) < 0 && errno != ESPIPE) {
            fprintf(stderr, "abibench-launch: cannot rewind stdin: %s\n", strerror(errno));
            return 125;
        }
        pid_t pid = 0;
        t0 = now_ns();
        if (run == 0) s->t_first = t0;
        s->exec_errno = spawn_program(&pid, o->program, reset, run > 0);
        /* Held on the launcher's CPU through its exec (start_here), the program is set free
         * now: a mask that holds the CPU it is on moves nothing. */
        if (s->exec_errno == 0 && free_mask)
            sched_setaffinity(pid, sizeof *free_mask, free_mask);
        if (s->exec_errno != 0) {
            s->t1 = now_ns();
            s->wall += s->t1 - t0;
            s->what = "execfail";
            break;
        }
        s->runs++;
        s->status = 0;
        struct rusage ru;
        memset(&ru, 0, sizeof ru);
        if (wait_program(pid, s, &ru, waited, deadline) != 0) return 125;
        s->t1 = now_ns();
        s->wall += s->t1 - t0;
        add_rusage(&s->ru_sum, &ru);
        /* Anything the program left behind, in its group or not, goes with it. */
        s->escaped += kill_the_rest(pid, s->what != NULL, chld);
        if (o->cgroup_dir) kill_group_members(o->cgroup_dir, chld);
        if (!s->what && !(WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0))
            break; /* a failed run ends the sample: it is the one reported */
    }
    return 0;
}

/* The one result line; 0, or 125 when it could not be written. */
static int write_result(FILE *out, sample *s, long long cov_iters) {
    int code = -1, sig = 0;
    if (s->exec_errno != 0) {
        code = 127;
    } else {
        if (WIFEXITED(s->status)) code = WEXITSTATUS(s->status);
        if (WIFSIGNALED(s->status)) sig = WTERMSIG(s->status);
    }
    if (!s->what) s->what = WIFSIGNALED(s->status) ? "signaled" : "exited";
    const struct rusage *ru = &s->ru_sum;
    fprintf(out,
            "status=%s code=%d signal=%d wall_ns=%lld user_us=%lld sys_us=%lld maxrss_kb=%ld "
            "minflt=%ld majflt=%ld nvcsw=%ld nivcsw=%ld errno=%d escaped=%d repeat=%lld "
            "t0_ns=%lld t1_ns=%lld busy_ticks=%lld steal_ticks=%lld hz=%ld cov_iters=%lld "
            "cov_ns=%lld tree_peak_kb=%lld subreaper=%d stops=%d\n",
            s->what, code, sig, (long long)s->wall, (long long)tv_us(ru->ru_utime),
            (long long)tv_us(ru->ru_stime), ru->ru_maxrss, ru->ru_minflt, ru->ru_majflt,
            ru->ru_nvcsw, ru->ru_nivcsw, s->exec_errno, s->escaped, s->runs ? s->runs : 1,
            (long long)s->t_first, (long long)s->t1, s->busy, s->steal, sysconf(_SC_CLK_TCK),
            (long long)s->cov_chunks * cov_iters, (long long)s->cov_ns, s->tree_peak_kb,
            s->subreaper, s->stops);
    if (fclose(out) != 0) { perror("abibench-launch: result"); return 125; }
    return 0;
}

int main(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, &o) != 0) return 125;
    sigset_t waited, chld;
    block_signals(&waited, &chld);
    sample s;
    memset(&s, 0, sizeof s);
    if (tie_to_parent(&s.subreaper) != 0) return 125;

    FILE *out = fopen(o.result_path, "w");
    if (!out) {
        fprintf(stderr, "abibench-launch: cannot write %s: %s\n", o.result_path, strerror(errno));
        return 125;
    }
    if (o.pin_cpu >= 0 && pin_to((int)o.pin_cpu) != 0) {
        fprintf(stderr, "abibench-launch: cannot pin to CPU %lld: %s\n", o.pin_cpu,
                strerror(errno));
        return 125;
    }
    sigset_t reset;
    spawn_setup(&reset);

    covariate cov = {.cpu = (int)o.cov_cpu, .iters = (long)o.cov_iters};
    pthread_t cov_thread;
    int cov_started = 0;
    if (o.cov_cpu >= 0 && start_covariate(&cov, &cov_thread, &cov_started) != 0) return 125;
    if (o.gate_fd >= 0) wait_for_gate((int)o.gate_fd);
    /* Joined last, right before the program starts: what the group then charges is the
     * program's tree, plus the few pages the launcher touches while it waits. */
    if (o.cgroup_dir && write_text(o.cgroup_dir, "cgroup.procs", "0\n") != 0) {
        fprintf(stderr, "abibench-launch: cannot join the memory cgroup %s: %s\n", o.cgroup_dir,
                strerror(errno));
        return 125;
    }

    long long busy0, steal0, busy1, steal1;
    cpu_ticks(&busy0, &steal0);
    long cov0 = atomic_load(&cov.chunks);
    int64_t cov_t0 = now_ns();
    cpu_set_t free_mask;
    int held = o.start_here && o.pin_cpu < 0 && hold_cpu(&free_mask);
    if (run_program(&o, &s, &reset, &waited, &chld, held ? &free_mask : NULL) != 0) return 125;
    s.tree_peak_kb = o.cgroup_dir ? group_peak_kb(o.cgroup_dir) : -1;
    s.cov_chunks = atomic_load(&cov.chunks) - cov0;
    s.cov_ns = now_ns() - cov_t0;
    cpu_ticks(&busy1, &steal1);
    s.busy = busy1 - busy0;
    s.steal = steal1 - steal0;
    if (cov_started) {
        atomic_store(&cov.stop, 1);
        pthread_join(cov_thread, NULL);
    }
    return write_result(out, &s, o.cov_iters);
}
