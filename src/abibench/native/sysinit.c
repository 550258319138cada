/* abibench's initramfs init for a booted whole system (abibench system run).
 *
 * Debian's kernels build the disk and file system drivers as modules, so the kernel alone cannot
 * mount a root disk. This init, PID 1 of a tiny initramfs, loads the modules listed in
 * /modules/order (each /modules/<name>.ko, dependencies first), waits for /dev/vda, mounts it
 * read-write (ext4) on /root, removes its own files (the initramfs is memory the measured system
 * would otherwise keep), and hands PID 1 to the system's /sbin/init (switch_root: the new root
 * moved over /, chroot, exec). The same initramfs serves every userspace of a kernel: the root
 * disk is what differs.
 *
 * Built statically for the kernel's own machine (a 32-bit one for an i386 kernel, which also runs
 * under an amd64 kernel); a failure is one line on the console and a power-off, never a hang.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "abibench-sysinit: %s: %s\n", what, strerror(errno));
    sync();
    reboot(RB_POWER_OFF);
    _exit(1);
}

static void load_modules(void) {
    FILE *order = fopen("/modules/order", "r");
    char name[256], path[300];
    if (!order) die("/modules/order");
    while (fgets(name, sizeof name, order)) {
        name[strcspn(name, "\n")] = 0;
        if (!name[0]) continue;
        snprintf(path, sizeof path, "/modules/%s.ko", name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) die(path);
        if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST) die(path);
        close(fd);
        unlink(path);
    }
    fclose(order);
    unlink("/modules/order");
    rmdir("/modules");
}

static void wait_for(const char *dev, int seconds) {
    struct stat st;
    for (int i = 0; i < seconds * 10; i++) {
        if (stat(dev, &st) == 0) return;
        struct timespec t = {0, 100000000};
        nanosleep(&t, NULL);
    }
    errno = ENOENT;
    die(dev);
}

int main(void) {
    if (mount("devtmpfs", "/dev", "devtmpfs", 0, "") != 0 && errno != EBUSY) die("mount /dev");
    load_modules();
    wait_for("/dev/vda", 60);
    if (mount("/dev/vda", "/root", "ext4", 0, "") != 0) die("mount /dev/vda");
    if (umount2("/dev", MNT_DETACH) != 0) die("umount /dev");
    unlink("/dev/console");
    unlink("/init");
    if (chdir("/root") != 0) die("chdir /root");
    if (mount(".", "/", NULL, MS_MOVE, NULL) != 0) die("move the root");
    if (chroot(".") != 0 || chdir("/") != 0) die("chroot");
    char *argv[] = {"/sbin/init", NULL};
    execv(argv[0], argv);
    die("exec /sbin/init");
    return 1;
}
