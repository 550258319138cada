/* abibench's init for a booted guest (abibench vm): PID 1 of an initramfs with no C library.
 *
 * It mounts /proc, /sys and /dev, runs the programs listed in /abibench/jobs one after the
 * other, and reports each one's exit status, wall time and wait4 rusage (peak resident set in
 * KiB: the guest kernel's own count) with its stdout and stderr, on the second serial port
 * (/dev/ttyS1) in a framed line format, then powers the machine off. The kernel's console is
 * the first port: its messages never mix with the report.
 *
 * Jobs file, one field a line:  "J <label>", "T <timeout seconds>", "A <argument as hex>"
 * (once per argv element), "E" ending the job.
 * Report, one frame a line, every free-form field as hex (nothing a program prints can forge a
 * frame), each ending with the FNV-1a hash (32 bits, 8 hex digits) of what precedes it:
 *   "ABIBENCH-VM 1 BEGIN <release hex> <machine hex> <hash>"
 *   "R <label> <exit|signal|timeout|spawn> <code> <wall ns> <maxrss KiB> <user us> <sys us>
 *      <minflt> <majflt> <stdout hex> <stderr hex> <hash>"
 *   "ABIBENCH-VM 1 END <number of R lines> <hash>"
 * Built statically with the host compiler (obtain/vmimage.py); the host parses it in run/vm.py.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#define MAX_ARGS 256
#define OUT_CAP (1 << 20)  /* stdout kept per job; the rest is read and dropped */
#define ERR_CAP 4096       /* stderr: its last bytes are enough for a failure's reason */

static FILE *report;

static int unhex(const char *s, char *out, size_t cap) {
    size_t n = strlen(s);
    if (n % 2 || n / 2 >= cap) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1;
        out[i] = (char)v;
    }
    out[n / 2] = 0;
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct buf { unsigned char *p; size_t n, cap; int keep_tail; };

static void take(struct buf *b, const unsigned char *p, size_t n) {
    if (b->keep_tail) {  /* stderr: a ring of the last cap bytes, linearised at the end */
        for (size_t i = 0; i < n; i++) {
            if (b->n == b->cap) { memmove(b->p, b->p + 1, b->cap - 1); b->n--; }
            b->p[b->n++] = p[i];
        }
        return;
    }
    size_t room = b->cap - b->n;
    if (n > room) n = room;
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

/* A job that could not start: its line says why (the errno). */
static void report_spawn_failure(const char *label, int error) {
    char text[256];
    snprintf(text, sizeof text, "R %s spawn %d 0 0 0 0 0 0 - -", label, error);
    frame_text(report, text);
    frame_end(report);
}

/* In the forked child: the job in its own process group, its output into the pipes, no input. */
static _Noreturn void exec_job(char **argv, int out, int err) {
    setpgid(0, 0);
    dup2(out, 1);
    dup2(err, 2);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0) dup2(nul, 0);
    execv(argv[0], argv);
    /* Its reason reaches the report as the job's stderr (ENOEXEC: a kernel without x32). */
    fprintf(stderr, "abibench-vminit: cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* The job's stdout and stderr, read until both are closed or its time is up: 1 when it is. */
static int read_output(struct pollfd fds[2], struct buf *o, struct buf *e, double t0,
                       double timeout) {
    int timed_out = 0, open_fds = 2;
    unsigned char chunk[65536];
    while (open_fds > 0) {
        double left = timeout - (now() - t0);
        if (left <= 0) { timed_out = 1; break; }
        int r = poll(fds, 2, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n <= 0) { close(fds[i].fd); fds[i].fd = -1; open_fds--; continue; }
            take(i == 0 ? o : e, chunk, (size_t)n);
        }
    }
    return timed_out;
}

/* Its status and rusage, waited for within its time (killed when it is up, or was). */
static void wait_job(pid_t pid, double t0, double timeout, int *timed_out, int *status,
                     struct rusage *ru) {
    if (*timed_out) { kill(-pid, SIGKILL); kill(pid, SIGKILL); }
    for (;;) {  /* its pipes are closed: wait for it, still within its time */
        pid_t w = wait4(pid, status, *timed_out ? 0 : WNOHANG, ru);
        if (w == pid) break;
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) break;
        if (now() - t0 > timeout) {
            *timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        } else {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
}

/* The job's "R" frame. */
static void report_job(const char *label, int timed_out, int status, double wall,
                       const struct rusage *ru, const struct buf *o, const struct buf *e) {
    const char *kind = timed_out ? "timeout" : WIFSIGNALED(status) ? "signal" : "exit";
    int code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
    char text[512];
    snprintf(text, sizeof text, "R %s %s %d %lld %ld %lld %lld %ld %ld ", label, kind, code,
             (long long)(wall * 1e9), ru->ru_maxrss,
             (long long)ru->ru_utime.tv_sec * 1000000 + ru->ru_utime.tv_usec,
             (long long)ru->ru_stime.tv_sec * 1000000 + ru->ru_stime.tv_usec,
             ru->ru_minflt, ru->ru_majflt);
    frame_text(report, text);
    frame_hex(report, o->p, o->n);
    frame_put(report, ' ');
    frame_hex(report, e->p, e->n);
    frame_end(report);
}

/* Run one job; its line goes to the report. */
/* A program's start and end for abibench's instruction-counting plugin under qemu-system
 * (native/insncount.c, mode=system): no-ops of bytes no compiler emits, which the plugin finds
 * when it translates them. Every job passes both, failed spawns too, so the plugin's counts
 * line up with the report's jobs. */
#if defined(__x86_64__) || defined(__i386__)
#define MARK_START() __asm__ volatile(".byte 0x0f, 0x1f, 0x80, 0x42, 0x49, 0x42, 0x41" ::: "memory")
#define MARK_END() __asm__ volatile(".byte 0x0f, 0x1f, 0x80, 0x45, 0x49, 0x42, 0x41" ::: "memory")
#else
#define MARK_START() ((void)0)
#define MARK_END() ((void)0)
#endif

static void run_job(const char *label, char **argv, double timeout) {
    MARK_START();
    int out[2], err[2];
    static unsigned char obuf[OUT_CAP], ebuf[ERR_CAP];
    struct buf o = {obuf, 0, OUT_CAP, 0}, e = {ebuf, 0, ERR_CAP, 1};
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        MARK_END();
        report_spawn_failure(label, errno);
        return;
    }
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) exec_job(argv, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        MARK_END();
        report_spawn_failure(label, errno);
        close(out[0]);
        close(err[0]);
        return;
    }
    struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int timed_out = read_output(fds, &o, &e, t0, timeout);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    wait_job(pid, t0, timeout, &timed_out, &status, &ru);
    MARK_END();
    double wall = now() - t0;
    for (int i = 0; i < 2; i++) if (fds[i].fd >= 0) close(fds[i].fd);
    report_job(label, timed_out, status, wall, &ru, &o, &e);
}

static FILE *open_report(void) {
    int fd = open("/dev/ttyS1", O_WRONLY | O_NOCTTY);
    if (fd < 0) return NULL;
    struct termios t;
    if (tcgetattr(fd, &t) == 0) {  /* raw: the tty must not turn "\n" into "\r\n" */
        cfmakeraw(&t);
        cfsetospeed(&t, B115200);
        tcsetattr(fd, TCSANOW, &t);
    }
    return fdopen(fd, "w");
}

static void power_off(void) {
    sync();
    reboot(RB_POWER_OFF);
    for (;;) pause();  /* PID 1 must not exit: the kernel would panic (and reboot, -no-reboot) */
}

int main(void) {
    mount("proc", "/proc", "proc", 0, NULL);
    mount("sysfs", "/sys", "sysfs", 0, NULL);
    mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
    mkdir("/work", 0755);
    if (chdir("/work") != 0) chdir("/");
    setenv("PATH", "/bin", 1);
    setenv("HOME", "/work", 1);
    report = open_report();
    if (report == NULL) {
        fprintf(stderr, "abibench-vminit: cannot open /dev/ttyS1: %s\n", strerror(errno));
        power_off();
    }
    struct utsname u;
    uname(&u);
    frame_hash = 2166136261u;
    frame_text(report, "ABIBENCH-VM 1 BEGIN ");
    frame_hex(report, u.release, strlen(u.release));
    frame_put(report, ' ');
    frame_hex(report, u.machine, strlen(u.machine));
    frame_end(report);

    FILE *jobs = fopen("/abibench/jobs", "r");
    static char line[1 << 16], label[128];
    static char args[MAX_ARGS][4096];
    char *argv[MAX_ARGS + 1];
    int argc = 0, done = 0;
    double timeout = 60;
    while (jobs && fgets(line, sizeof line, jobs)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == 'J' && line[1] == ' ') {
            snprintf(label, sizeof label, "%s", line + 2);
            argc = 0;
        } else if (line[0] == 'T' && line[1] == ' ') {
            timeout = atof(line + 2);
        } else if (line[0] == 'A' && line[1] == ' ' && argc < MAX_ARGS) {
            if (unhex(line + 2, args[argc], sizeof args[argc]) == 0) argc++;
        } else if (line[0] == 'E' && argc > 0) {
            for (int i = 0; i < argc; i++) argv[i] = args[i];
            argv[argc] = NULL;
            run_job(label, argv, timeout);
            done++;
        }
    }
    char text[64];
    snprintf(text, sizeof text, "ABIBENCH-VM 1 END %d", done);
    frame_text(report, text);
    frame_end(report);
    tcdrain(fileno(report));
    power_off();
    return 0;
}
