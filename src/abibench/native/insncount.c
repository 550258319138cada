/*
 * abibench's QEMU TCG plugin: the number of guest instructions a program executes under
 * qemu-user, written to a file when the program exits.
 *
 *   qemu-aarch64 -L ROOT -plugin libinsncount.so,out=COUNT_FILE PROGRAM ARGS...
 *
 * COUNT_FILE then holds one line:
 *
 *   insncount 1 insns=<executed guest instructions> vcpus=<guest threads seen> target=<arch>
 *
 * ("insncount 1" is the format and its version; a reader ignores keys it does not know.)
 * The line is written to COUNT_FILE.tmp.<pid> and renamed, so a reader finds the whole line or
 * no file. A forked guest child counts from zero and writes COUNT_FILE.<its pid>.
 *
 * How it counts: when QEMU translates a block of guest code, the plugin asks to be called each
 * time that block starts executing, with the block's instruction count as the callback's data.
 * The callback adds it to the counter of the vCPU (in user mode: the guest thread) that runs
 * it; each counter sits on its own cache line and is written only by the thread holding that
 * vCPU index, so the hot path needs no atomic operation. A block left in the middle (a fault
 * the guest handles, or QEMU restarting a block to run an atomic operation exclusively) counts
 * whole; system calls are the host's work and do not count; the guest's loader and C library
 * do.
 *
 * QEMU 7.2 calls the exit callback from the guest's exit()/exit_group() with every vCPU
 * stopped, so the counters can be summed there without locks. A guest killed by a signal, or
 * one that execs another program, writes nothing: its count is unknown, never guessed.
 *
 * Under qemu-system (mode=system, abibench vm --counters) there is no single program: the guest
 * runs a kernel and abibench's init (native/vminit.c), which runs each program in turn. Only
 * blocks at user-space addresses count (the lower half of a 64-bit guest's address space: the
 * kernel's work is not the program's, as under qemu-user), and the init marks each program's
 * start and end with a no-op instruction of its own bytes (MARK_START, MARK_END: a nopl with a
 * displacement no compiler emits). Each end appends "mark insns=<N>" to COUNT_FILE: the user
 * instructions executed between the two marks, the program's and the few hundred of the init
 * waiting for it (constant from run to run).
 *
 * Built against qemu-plugin.h of the installed QEMU (abibench fetches it from Debian's qemu
 * source package at the installed version); needs nothing but libc.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define SLOTS 512 /* guest threads alive at once; more share one atomic counter */
#define LINE 64

struct counter {
    uint64_t n;
    char pad[LINE - sizeof(uint64_t)];
};

static struct counter per_vcpu[SLOTS] __attribute__((aligned(LINE)));
static uint64_t shared_count; /* atomic: vCPU indexes past SLOTS */
static unsigned vcpus;        /* atomic */
static char out_path[4096];
static char arch[64];
static pid_t first_pid;
static int system_mode;
static uint64_t mark_from; /* the user-instruction total at the last MARK_START */

/* nopl 0x41424942(%rax) and nopl 0x41424945(%rax): "BIBA" / "EIBA", in native/vminit.c too. */
static const unsigned char MARK_START[7] = {0x0f, 0x1f, 0x80, 0x42, 0x49, 0x42, 0x41};
static const unsigned char MARK_END[7] = {0x0f, 0x1f, 0x80, 0x45, 0x49, 0x42, 0x41};

static void block_executed(unsigned int vcpu, void *insns)
{
    uint64_t n = (uint64_t)(uintptr_t)insns;

    if (vcpu < SLOTS)
        per_vcpu[vcpu].n += n;
    else
        __atomic_fetch_add(&shared_count, n, __ATOMIC_RELAXED);
}

static void block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_executed, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static uint64_t total_now(void)
{
    uint64_t total = __atomic_load_n(&shared_count, __ATOMIC_RELAXED);

    for (size_t i = 0; i < SLOTS; i++)
        total += per_vcpu[i].n;
    return total;
}

static void mark_executed(unsigned int vcpu, void *end)
{
    FILE *f;

    (void)vcpu;
    if (end == NULL) {
        mark_from = total_now();
        return;
    }
    f = fopen(out_path, "a");
    if (f == NULL) {
        fprintf(stderr, "insncount: cannot append to %s: %s\n", out_path, strerror(errno));
        return;
    }
    fprintf(f, "mark insns=%" PRIu64 "\n", total_now() - mark_from);
    fclose(f);
}

/* System mode: count user-space blocks only, and watch for the init's marks. */
static void system_block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);

    (void)id;
    if ((int64_t)qemu_plugin_tb_vaddr(tb) < 0)
        return; /* the upper half: the kernel's */
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_executed, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)n);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        const void *data = qemu_plugin_insn_data(insn);

        if (qemu_plugin_insn_size(insn) != sizeof MARK_START)
            continue;
        if (memcmp(data, MARK_START, sizeof MARK_START) == 0)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_executed, QEMU_PLUGIN_CB_NO_REGS,
                                                   NULL);
        else if (memcmp(data, MARK_END, sizeof MARK_END) == 0)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, mark_executed, QEMU_PLUGIN_CB_NO_REGS,
                                                   (void *)1);
    }
}

static void vcpu_started(qemu_plugin_id_t id, unsigned int vcpu)
{
    (void)id;
    (void)vcpu;
    __atomic_fetch_add(&vcpus, 1, __ATOMIC_RELAXED);
}

/* A forked child has a copy of the parent's counters: it reports its own work only. */
static void forked_child(void)
{
    memset(per_vcpu, 0, sizeof per_vcpu);
    shared_count = 0;
    vcpus = 1;
}

static void guest_exited(qemu_plugin_id_t id, void *data)
{
    char final[4200], tmp[4200];
    uint64_t total = __atomic_load_n(&shared_count, __ATOMIC_RELAXED);
    pid_t pid = getpid();
    FILE *f;

    (void)id;
    (void)data;
    for (size_t i = 0; i < SLOTS; i++)
        total += per_vcpu[i].n;
    if (pid == first_pid)
        snprintf(final, sizeof final, "%s", out_path);
    else
        snprintf(final, sizeof final, "%s.%ld", out_path, (long)pid);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long)pid);
    f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "insncount: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    fprintf(f, "insncount 1 insns=%" PRIu64 " vcpus=%u target=%s\n", total,
            __atomic_load_n(&vcpus, __ATOMIC_RELAXED), arch);
    if (fclose(f) != 0 || rename(tmp, final) != 0) {
        fprintf(stderr, "insncount: cannot write %s: %s\n", final, strerror(errno));
        unlink(tmp);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && argv[i][4] != '\0' &&
            strlen(argv[i] + 4) < sizeof out_path) {
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        } else if (strcmp(argv[i], "mode=system") == 0) {
            system_mode = 1;
        } else {
            fprintf(stderr, "insncount: unknown or too long argument '%s'; they are "
                    "out=FILE and mode=system\n", argv[i]);
            return -1;
        }
    }
    if (out_path[0] == '\0') {
        fprintf(stderr, "insncount: no out=FILE given\n");
        return -1;
    }
    if (info->system_emulation != system_mode) {
        fprintf(stderr, "insncount: mode=system is for qemu-system, and only for it\n");
        return -1;
    }
    if (system_mode) {
        snprintf(arch, sizeof arch, "%s", info->target_name);
        qemu_plugin_register_vcpu_tb_trans_cb(id, system_block_translated);
        return 0;
    }
    snprintf(arch, sizeof arch, "%s", info->target_name);
    first_pid = getpid();
    if (pthread_atfork(NULL, NULL, forked_child) != 0)
        return -1;
    qemu_plugin_register_vcpu_init_cb(id, vcpu_started);
    qemu_plugin_register_vcpu_tb_trans_cb(id, block_translated);
    qemu_plugin_register_atexit_cb(id, guest_exited, NULL);
    return 0;
}
