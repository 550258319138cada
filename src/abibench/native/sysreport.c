/* abibench's measuring service in a booted whole system (abibench system run).
 *
 * Started by systemd after multi-user.target (abibench-report.service), it waits for the system
 * to settle (abibench.settle=N seconds on the kernel command line), then reports what the running kernel counts, on the second serial
 * port (/dev/ttyS1, or the device abibench.port= names: a virtio serial port on ARM's virt),
 * in the framed format of native/frame.h (one frame a line, free-form fields
 * as hex, each ending with the FNV-1a hash of what precedes it):
 *   "ABIBENCH-SYS 1 BEGIN <release hex> <machine hex> <hash>"
 *   "Y <phase> <systemctl is-system-running's answer, hex> <hash>"
 *   "R <phase> <the ready check's last line, hex> <hash>"   a profile with a ready script (the
 *        desktop's page check) leaves what its last check saw in READY_LAST: sent as it is, so a
 *        system measured `degraded` says why it never became ready (ready_answer())
 *   "S <phase> <guest uptime ms> <hash>"
 *   "M <phase> <meminfo key> <kB> <hash>"               every line of /proc/meminfo
 *   "K <phase> <iomem name hex> <bytes> <hash>"          the kernel image's ranges in /proc/iomem
 *   "P <phase> <pid> <pss kB> <rss kB> <comm hex> <cgroup hex> <hash>"   every user process
 *   "G <phase> <pid> <mapping hex> <count> <size kB> <rss kB> <pss kB> <anonymous kB> <hash>"
 *   "T <phase> <pid> <threads> <hash>"
 *        for each process of at least BIG_PSS_KB: its /proc/PID/smaps summed per mapped file or
 *        kind ([heap], [stack], [anon], ...; anonymous mappings of BIG_MAP_KB or more each on
 *        its own, as "[anon N kB]"), and its thread count (see breakdown())
 *   "Z <phase> <zone hex> <field> <kB> <hash>"       /proc/zoneinfo per zone: its watermarks
 *        (min, low, high), spanned, present and managed memory, and the largest of its
 *        lowmem_reserve ("protection"), which the kernel's MemAvailable subtracts (zoneinfo());
 *        only the fields a whole line of the zone gave
 *   "R idle <file hex> <text hex> <hash>"  the raw text of /proc/zoneinfo, meminfo and iomem
 *        (what the parsers' tests are fed; the host's report parser ignores it)
 *   "C load <name hex> <count> <hash>"    the work the load did, as it counted it (its output's
 *        "NAME N" lines: requests, queries)
 *   "D load <load's duration ms> <guard s, or 0> <hash>"   guard: the time limit fired
 *   "X load <exit status of the load> <hash>"
 *   "ABIBENCH-SYS 1 END <number of frames before it> <hash>"
 * Phase "idle" is measured after the settling time; when /etc/abibench/load exists (a profile's
 * load: a fixed amount of work, run by /bin/sh) phase "load" is measured after it ended,
 * abibench.load_after=N seconds later, so every system is measured after the same work;
 * abibench.load_seconds=N is only a guard (the load is killed then, and the D frame says so).
 * Then the machine is powered off (its disk is a throw-away overlay).
 * Built statically per userspace ABI: the 64-bit system holds no 32-bit program and vice versa.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

static FILE *report;

static void text(const char *s) { frame_text(report, s); }

static void fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static void fmt(const char *f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    text(buf);
}

/* A whole small file (at most cap-1 bytes), NUL-terminated; its length, or -1. */
static long slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
    close(fd);
    buf[n] = 0;
    return (long)n;
}

/* What a /proc text is read as: whole lines only. A text cut short (the buffer's cap, a file
 * that changed while read) ends in a partial line whose number may be a prefix of the real one
 * ("MemFree: 12" of "12345 kB"), so what follows the last newline is dropped: a number is
 * reported only from a line read whole, and only for a field that line names
 * (docs/reliability.md, "The measuring service reports only what it read whole"). */
static void whole_lines(char *buf) {
    char *nl = strrchr(buf, '\n');
    if (nl) nl[1] = 0;
    else buf[0] = 0;
}

/* A count: 1 to 13 decimal digits, at most COUNT_MAX (no sign, no overflow); its end, or NULL. */
#define COUNT_MAX 1000000000000LL
static const char *count_of(const char *p, long long *out) {
    long long v = 0;
    const char *start = p;
    while (*p >= '0' && *p <= '9') {
        if (p - start >= 13) return NULL;
        v = v * 10 + (*p++ - '0');
    }
    if (p == start || v > COUNT_MAX) return NULL;
    *out = v;
    return p;
}

/* An address: 1 to 16 hex digits; its end, or NULL. */
static const char *address_of(const char *p, unsigned long long *out) {
    unsigned long long v = 0;
    const char *start = p;
    while (isxdigit((unsigned char)*p)) {
        if (p - start >= 16) return NULL;
        int c = tolower((unsigned char)*p++);
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    if (p == start) return NULL;
    *out = v;
    return p;
}

/* The raw text of a /proc file, as one frame (idle phase): "R <phase> <file hex> <text hex>".
 * The host's parsers ignore it; it is what tests/data/proc holds, the texts the parsers below
 * are tested on (tests/test_sysreport_parse.py). */
static void raw(const char *phase, const char *file, const char *buf, long n) {
    if (n <= 0 || strcmp(phase, "idle") != 0) return;
    fmt("R %s ", phase);
    frame_hex(report, file, strlen(file));
    frame_put(report, ' ');
    frame_hex(report, buf, (size_t)n);
    frame_end(report);
}

/* "Key:   N kB" or "Key:   N": M frames, the key's non-word characters as '_'. */
#define MEMINFO_CAP 16384
static void meminfo_text(const char *phase, char *buf) {
    whole_lines(buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char key[64];
        long long kb;
        char *colon = strchr(line, ':');
        size_t klen = colon ? (size_t)(colon - line) : 0;
        if (klen == 0 || klen > 60) continue;
        const char *end = count_of(colon + 1 + strspn(colon + 1, " "), &kb);
        if (!end || (*end && strcmp(end, " kB") != 0)) continue;
        memcpy(key, line, klen);
        key[klen] = 0;
        for (char *k = key; *k; k++) if (!isalnum((unsigned char)*k) && *k != '_') *k = '_';
        fmt("M %s %s %lld", phase, key, kb);
        frame_end(report);
    }
}

static void meminfo(const char *phase) {
    static char buf[MEMINFO_CAP];
    long n = slurp("/proc/meminfo", buf, sizeof buf);
    raw(phase, "meminfo", buf, n);
    if (n >= 0) meminfo_text(phase, buf);
}

/* "  START-END : Kernel code": K frames of the kernel image's ranges, in bytes. */
#define IOMEM_CAP 65536
static void iomem_text(const char *phase, char *buf) {
    whole_lines(buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long long a, b;
        const char *p = address_of(line + strspn(line, " "), &a);
        if (!p || *p != '-' || !(p = address_of(p + 1, &b)) || strncmp(p, " : ", 3) != 0)
            continue;
        const char *name = p + 3;
        size_t n = strlen(name);
        if (n > 127 || strncmp(name, "Kernel ", 7) != 0 || b < a || b - a >= 999999999999999ULL)
            continue;
        fmt("K %s ", phase);
        frame_hex(report, name, n);
        fmt(" %llu", b - a + 1);
        frame_end(report);
    }
}

static void iomem(const char *phase) {
    static char buf[IOMEM_CAP];
    long n = slurp("/proc/iomem", buf, sizeof buf);
    raw(phase, "iomem", buf, n);
    if (n >= 0) iomem_text(phase, buf);
}

/* One zone's numbers from /proc/zoneinfo, in pages, and which of them a line gave. */
#define ZONE_FIELDS 7
#define MAX_ZONES 16
#define ZONEINFO_CAP 65536
static const char *const zone_field[ZONE_FIELDS] = {
    "min", "low", "high", "spanned", "present", "managed", "protection"};
struct zone { char name[32]; long long v[ZONE_FIELDS]; unsigned seen; };

/* "protection: (0, 2815, 3781)", lowmem_reserve[]: the largest of the counts read. */
static void zone_protection(struct zone *z, const char *p) {
    long long n;
    const char *end;
    while ((end = count_of(p, &n)) != NULL) {
        if (!(z->seen & 1u << 6) || n > z->v[6]) z->v[6] = n;
        z->seen |= 1u << 6;
        if (strncmp(end, ", ", 2) != 0) break;
        p = end + 2;
    }
}

/* A line of a zone, its leading spaces skipped: "min      5" (exactly the field, spaces, a
 * count, the end), or the protection line. */
static void zone_line(struct zone *z, const char *line) {
    long long n;
    if (strncmp(line, "protection: (", 13) == 0) {
        zone_protection(z, line + 13);
        return;
    }
    for (int i = 0; i < 6; i++) {
        size_t k = strlen(zone_field[i]);
        if (strncmp(line, zone_field[i], k) != 0 || line[k] != ' ') continue;
        const char *end = count_of(line + k + strspn(line + k, " "), &n);
        if (end && *end == 0) {
            z->v[i] = n;
            z->seen |= 1u << i;
        }
        return;
    }
}

/* "Node N, zone   NAME": the zone's name (1-31 word characters), or 0. */
static int zone_header(const char *line, char *name) {
    long long node;
    const char *p;
    if (strncmp(line, "Node ", 5) != 0 || !(p = count_of(line + 5, &node)) ||
        strncmp(p, ", zone ", 7) != 0)
        return 0;
    p += 7 + strspn(p + 7, " ");
    size_t n = strlen(p);
    if (n == 0 || n > 31) return 0;
    for (size_t i = 0; i < n; i++) if (!isalnum((unsigned char)p[i]) && p[i] != '_') return 0;
    memcpy(name, p, n + 1);
    return 1;
}

/* Where MemTotal - MemAvailable goes beyond what processes and caches use: MemAvailable
 * subtracts every zone's high watermark plus its largest lowmem_reserve (the kernel's
 * totalreserve_pages), and a zone's present - managed is memory the kernel kept at boot.
 * Z frames of the first MAX_ZONES zones, only the fields a line of the zone gave. */
static void zoneinfo_text(const char *phase, char *buf, long long page_kb) {
    static struct zone zones[MAX_ZONES];
    int n = 0;
    whole_lines(buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char name[32];
        if (zone_header(line, name)) {
            if (n == MAX_ZONES) break;
            memset(&zones[n], 0, sizeof zones[n]);
            memcpy(zones[n++].name, name, sizeof name);
        } else if (n > 0) {
            zone_line(&zones[n - 1], line + strspn(line, " "));
        }
    }
    for (int i = 0; i < n; i++)
        for (int f = 0; f < ZONE_FIELDS; f++) {
            if (!(zones[i].seen & 1u << f)) continue;
            fmt("Z %s ", phase);
            frame_hex(report, zones[i].name, strlen(zones[i].name));
            fmt(" %s %lld", zone_field[f], zones[i].v[f] * page_kb);
            frame_end(report);
        }
}

static void zoneinfo(const char *phase) {
    static char buf[ZONEINFO_CAP];
    long n = slurp("/proc/zoneinfo", buf, sizeof buf);
    raw(phase, "zoneinfo", buf, n);
    if (n >= 0) zoneinfo_text(phase, buf, sysconf(_SC_PAGESIZE) / 1024);
}

/* "Key:<spaces or tabs>N<unit>" as the whole of `line` (its newline cut or not): N, or -1. */
static long long line_count(const char *line, const char *key, const char *unit) {
    size_t k = strlen(key), u = strlen(unit);
    long long v;
    if (strncmp(line, key, k) != 0) return -1;
    const char *end = count_of(line + k + strspn(line + k, " \t"), &v);
    if (!end || strncmp(end, unit, u) != 0) return -1;
    end += u;
    return *end == 0 || (*end == '\n' && end[1] == 0) ? v : -1;
}

/* The first whole line of `buf` that is "Key: N<unit>", or -1. */
static long long text_count(char *buf, const char *key, const char *unit) {
    whole_lines(buf);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        long long v = line_count(line, key, unit);
        if (v >= 0) return v;
    }
    return -1;
}

/* Where a big process's memory is (breakdown): its smaps mappings summed per name. */
#define BIG_PSS_KB 16384
#define BIG_MAP_KB 8192
#define MAX_NAMES 128
#define ROLLUP_CAP 4096
#define STATUS_CAP 4096
struct mapsum { char name[160]; long long count, size, rss, pss, anon; };

/* The row of `name`; the table's last row is "[other]", for every name beyond the others
 * (a full table never adds a mapping's numbers to another mapping's row). */
static struct mapsum *mapsum_of(struct mapsum *t, int *n, const char *name) {
    for (int i = 0; i < *n; i++) if (strcmp(t[i].name, name) == 0) return &t[i];
    if (*n >= MAX_NAMES - 1) {
        name = "[other]";
        for (int i = 0; i < *n; i++) if (strcmp(t[i].name, name) == 0) return &t[i];
    }
    struct mapsum *m = &t[(*n)++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    return m;
}

/* A mapping's first smaps line ("5581c000-5581e000 r--p ..."), not one of its "Key: N kB". */
static int is_header(const char *line) {
    const char *p = line;
    while (isxdigit((unsigned char)*p)) p++;
    if (p == line || *p != '-') return 0;
    const char *q = ++p;
    while (isxdigit((unsigned char)*p)) p++;
    return p > q && *p == ' ';
}

/* The name a mapping is summed under, from its smaps header line and size. */
static void mapping_name(const char *header, long long size_kb, char *out, size_t cap) {
    int pos = 0;
    unsigned long long a, b;
    if (sscanf(header, "%llx-%llx %*s %*s %*s %*s %n", &a, &b, &pos) < 2 || pos == 0 ||
        header[pos] == 0 || header[pos] == '\n') {
        if (size_kb >= BIG_MAP_KB) snprintf(out, cap, "[anon %lld kB]", size_kb);
        else snprintf(out, cap, "[anon]");
        return;
    }
    snprintf(out, cap, "%s", header + pos);
    out[strcspn(out, "\n")] = 0;
}

/* A big process's memory by mapping (added for the server's MariaDB: heap, anonymous arenas,
 * files); each number is the kernel's own smaps field, summed. Read a piece at a time: a
 * line longer than the buffer (a long file name) comes in pieces, and only a line's first
 * piece is read as a line; numbers only from whole lines, of a mapping whose header was read. */
static void breakdown_from(const char *phase, const char *pid, FILE *f) {
    static struct mapsum table[MAX_NAMES];
    static char line[1024], header[1024];
    int n = 0, whole = 1;
    struct mapsum *cur = NULL;
    header[0] = 0;
    while (fgets(line, sizeof line, f)) {
        int first = whole;
        long long v;
        whole = strchr(line, '\n') != NULL;
        if (!first) continue;
        if (is_header(line)) {
            snprintf(header, sizeof header, "%s", line);
            cur = NULL;
        } else if (!whole || !header[0]) {
            continue;
        } else if ((v = line_count(line, "Size:", " kB")) >= 0) {
            char name[160];
            mapping_name(header, v, name, sizeof name);
            cur = mapsum_of(table, &n, name);
            cur->count++;
            cur->size += v;
        } else if (cur && (v = line_count(line, "Rss:", " kB")) >= 0) cur->rss += v;
        else if (cur && (v = line_count(line, "Pss:", " kB")) >= 0) cur->pss += v;
        else if (cur && (v = line_count(line, "Anonymous:", " kB")) >= 0) cur->anon += v;
    }
    for (int i = 0; i < n; i++) {
        fmt("G %s %s ", phase, pid);
        frame_hex(report, table[i].name, strlen(table[i].name));
        fmt(" %lld %lld %lld %lld %lld", table[i].count, table[i].size, table[i].rss,
            table[i].pss, table[i].anon);
        frame_end(report);
    }
}

/* The thread count of /proc/PID/status's text: a T frame, or none. */
static void threads_text(const char *phase, const char *pid, char *buf) {
    long long threads = text_count(buf, "Threads:", "");
    if (threads >= 0) {
        fmt("T %s %s %lld", phase, pid, threads);
        frame_end(report);
    }
}

static void breakdown(const char *phase, const char *pid, long long pss_kb) {
    static char path[320], status[STATUS_CAP];
    if (pss_kb < BIG_PSS_KB) return;
    snprintf(path, sizeof path, "/proc/%s/smaps", pid);
    FILE *f = fopen(path, "re");
    if (!f) return;
    breakdown_from(phase, pid, f);
    fclose(f);
    snprintf(path, sizeof path, "/proc/%s/status", pid);
    if (slurp(path, status, sizeof status) > 0) threads_text(phase, pid, status);
}

/* PSS and RSS from a smaps_rollup text: 1 when both were read. */
static int rollup_text(char *buf, long long *pss, long long *rss) {
    static char copy[ROLLUP_CAP];
    size_t n = strnlen(buf, sizeof copy - 1);
    memcpy(copy, buf, n);
    copy[n] = 0;
    *pss = text_count(buf, "Pss:", " kB");
    *rss = text_count(copy, "Rss:", " kB");
    return *pss >= 0 && *rss >= 0;
}

static void process(const char *phase, const char *pid) {
    static char path[320], rollup[ROLLUP_CAP], comm[64], cgroup[1024];
    long long pss, rss;
    snprintf(path, sizeof path, "/proc/%s/smaps_rollup", pid);
    if (slurp(path, rollup, sizeof rollup) <= 0) return;  /* a kernel thread, or gone */
    if (!rollup_text(rollup, &pss, &rss)) return;
    snprintf(path, sizeof path, "/proc/%s/comm", pid);
    long nc = slurp(path, comm, sizeof comm);
    snprintf(path, sizeof path, "/proc/%s/cgroup", pid);
    long ng = slurp(path, cgroup, sizeof cgroup);
    if (nc > 0 && comm[nc - 1] == '\n') comm[--nc] = 0;
    const char *cg = cgroup;
    if (ng > 0) {  /* cgroup v2: "0::/system.slice/cron.service" */
        char *two = strstr(cgroup, "0::");
        cg = two ? two + 3 : cgroup;
        cgroup[strcspn(cgroup, "\n")] = 0;
    }
    fmt("P %s %s %lld %lld ", phase, pid, pss, rss);
    frame_hex(report, comm, nc > 0 ? (size_t)nc : 0);
    frame_put(report, ' ');
    frame_hex(report, cg, ng > 0 ? strlen(cg) : 0);
    frame_end(report);
    breakdown(phase, pid, pss);
}

static void state(const char *phase) {
    char out[128] = "";
    FILE *p = popen("systemctl is-system-running 2>/dev/null", "r");
    size_t n = 0;
    if (p) {
        n = fread(out, 1, sizeof out - 1, p);
        pclose(p);
    }
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ')) n--;
    fmt("Y %s ", phase);
    frame_hex(report, out, n);
    frame_end(report);
}

/* What the profile's ready script's last check saw (one line it rewrites each check), or no
 * frame at all: a profile without a ready script writes none. */
#define READY_LAST "/run/abibench-ready.last"
static void ready_answer(const char *phase) {
    char buf[512];
    long n = slurp(READY_LAST, buf, sizeof buf);
    if (n <= 0) return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    fmt("R %s ", phase);
    frame_hex(report, buf, (size_t)n);
    frame_end(report);
}

static void measure(const char *phase) {
    char up[64];
    double s = 0;
    if (slurp("/proc/uptime", up, sizeof up) > 0) s = atof(up);
    state(phase);
    ready_answer(phase);
    fmt("S %s %lld", phase, (long long)(s * 1000));
    frame_end(report);
    meminfo(phase);
    zoneinfo(phase);
    iomem(phase);
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (isdigit((unsigned char)e->d_name[0]) && atol(e->d_name) != (long)getpid())
            process(phase, e->d_name);  /* not itself: the measuring is no part of the system */
    }
    if (d) closedir(d);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The load's output, "NAME N" a line: what it counted doing (C frames; other lines ignored). */
static void counts(const char *out) {
    static char copy[4096];
    snprintf(copy, sizeof copy, "%s", out);
    int n = 0;
    for (char *line = strtok(copy, "\n"); line && n < 16; line = strtok(NULL, "\n")) {
        char name[32];
        long long v;
        char rest;
        if (sscanf(line, "%31[a-z_] %lld %c", name, &v, &rest) != 2 || v < 0) continue;
        fmt("C load ");
        frame_hex(report, name, strlen(name));
        fmt(" %lld", v);
        frame_end(report);
        n++;
    }
}

/* Whatever the pipe holds now: kept while `out` has room, read and dropped beyond (a load
 * that prints more must not block on a full pipe). */
static void drain(int fd, char *out, size_t cap, size_t *got) {
    char scratch[4096];
    ssize_t r;
    for (;;) {
        int room = *got + 1 < cap;
        r = read(fd, room ? out + *got : scratch, room ? cap - 1 - *got : sizeof scratch);
        if (r <= 0) return;
        if (room) *got += (size_t)r;
    }
}

/* The profile's load: a fixed amount of work that ends. The system is measured `after_s`
 * seconds after it ended, so every combination is measured after the same work; `limit_s` is
 * a guard against a load that never ends (killed then, said in the D frame). */
static void load_phase(int limit_s, int after_s) {
    static char out[4096];
    size_t got = 0;
    int fds[2];
    if (access("/etc/abibench/load", R_OK) != 0 || pipe2(fds, O_CLOEXEC) != 0) return;
    double start = now_s();
    pid_t child = fork();
    if (child == 0) {
        dup2(fds[1], 1);
        execl("/bin/sh", "sh", "/etc/abibench/load", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    if (child < 0) {
        close(fds[0]);
        return;
    }
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    int status = 0, guard = 0;
    for (;;) {
        drain(fds[0], out, sizeof out, &got);
        if (waitpid(child, &status, WNOHANG) == child) break;
        if (now_s() - start >= limit_s) {
            guard = limit_s;
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            break;
        }
        usleep(200000);
    }
    double took = now_s() - start;
    drain(fds[0], out, sizeof out, &got);
    close(fds[0]);
    out[got] = 0;
    counts(out);
    fmt("D load %lld %d", (long long)(took * 1000), guard);
    frame_end(report);
    fmt("X load %d", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    frame_end(report);
    sleep((unsigned)after_s);
    measure("load");
}

/* A number the host put on the kernel command line ("abibench.settle=30"), or `otherwise`:
 * the timing is the run's, not the disk's, so one image serves every profile of its packages. */
static int cmdline_int(const char *key, int otherwise) {
    char line[4096], want[64];
    if (slurp("/proc/cmdline", line, sizeof line) <= 0) return otherwise;
    snprintf(want, sizeof want, "abibench.%s=", key);
    for (char *w = strtok(line, " \n"); w; w = strtok(NULL, " \n"))
        if (strncmp(w, want, strlen(want)) == 0) return atoi(w + strlen(want));
    return otherwise;
}

/* A word the host put on the kernel command line ("abibench.port=vport0p1") into `out`, or
 * `otherwise`. */
static void cmdline_word(const char *key, char *out, size_t cap, const char *otherwise) {
    char line[4096], want[64];
    snprintf(out, cap, "%s", otherwise);
    if (slurp("/proc/cmdline", line, sizeof line) <= 0) return;
    snprintf(want, sizeof want, "abibench.%s=", key);
    for (char *w = strtok(line, " \n"); w; w = strtok(NULL, " \n"))
        if (strncmp(w, want, strlen(want)) == 0) snprintf(out, cap, "%s", w + strlen(want));
}

/* The report's port: /dev/ttyS1 (x86: the second serial port), or the device the host names
 * (abibench.port=vport0p1: ARM's virt machine has one UART, its console, so the report goes to
 * a virtio serial port). Only a plain name of a device under /dev is opened. */
static FILE *open_report(void) {
    char name[64], path[80];
    cmdline_word("port", name, sizeof name, "ttyS1");
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c)) return NULL;
    snprintf(path, sizeof path, "/dev/%s", name);
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct termios t;
    if (tcgetattr(fd, &t) == 0) {  /* a tty, raw: it must not turn "\n" into "\r\n" */
        cfmakeraw(&t);
        cfsetospeed(&t, B115200);
        tcsetattr(fd, TCSANOW, &t);
    }
    return fdopen(fd, "w");
}

#ifdef SYSREPORT_PARSE_MAIN
/* The host's test of the parsers (tests/test_sysreport_parse.py), built only with
 * -DSYSREPORT_PARSE_MAIN: `abibench-sysreport KIND FILE PAGE_KB` reads FILE as /proc's KIND
 * (zoneinfo, meminfo, iomem; smaps, smaps_rollup, status of process 1) with the guest's own
 * buffer size and writes the frames to stdout. */
int main(int argc, char **argv) {
    static char buf[ZONEINFO_CAP];
    long long pss, rss;
    FILE *f;
    if (argc != 4) return 2;
    report = stdout;
    if (strcmp(argv[1], "zoneinfo") == 0 && slurp(argv[2], buf, ZONEINFO_CAP) >= 0)
        zoneinfo_text("idle", buf, atoll(argv[3]));
    else if (strcmp(argv[1], "meminfo") == 0 && slurp(argv[2], buf, MEMINFO_CAP) >= 0)
        meminfo_text("idle", buf);
    else if (strcmp(argv[1], "iomem") == 0 && slurp(argv[2], buf, IOMEM_CAP) >= 0)
        iomem_text("idle", buf);
    else if (strcmp(argv[1], "status") == 0 && slurp(argv[2], buf, STATUS_CAP) >= 0)
        threads_text("idle", "1", buf);
    else if (strcmp(argv[1], "smaps_rollup") == 0 && slurp(argv[2], buf, ROLLUP_CAP) >= 0) {
        if (rollup_text(buf, &pss, &rss)) {
            fmt("P idle 1 %lld %lld - -", pss, rss);
            frame_end(report);
        }
    } else if (strcmp(argv[1], "smaps") == 0 && (f = fopen(argv[2], "re")) != NULL) {
        breakdown_from("idle", "1", f);
        fclose(f);
    } else
        return 2;
    return 0;
}
#else
int main(void) {
    int settle = cmdline_int("settle", 30);
    int limit = cmdline_int("load_seconds", 120), after = cmdline_int("load_after", 10);
    report = open_report();
    if (!report) return 1;
    struct utsname u;
    uname(&u);
    text("ABIBENCH-SYS 1 BEGIN ");
    frame_hex(report, u.release, strlen(u.release));
    frame_put(report, ' ');
    frame_hex(report, u.machine, strlen(u.machine));
    frame_end(report);
    sleep((unsigned)settle);
    measure("idle");
    load_phase(limit, after);
    fmt("ABIBENCH-SYS 1 END %ld", frame_count);
    frame_end(report);
    sync();
    reboot(RB_POWER_OFF);
    return 0;
}
#endif
