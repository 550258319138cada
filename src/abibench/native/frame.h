/* The framed report format of abibench's guest programs (vminit.c, sysreport.c): one frame a
 * line, every free-form field as hex (nothing a program or process prints can forge a frame),
 * and each frame ending with " <FNV-1a hash of what precedes it, 8 hex digits>\n". A line cut
 * short (a deadline) or completed by anything else does not verify, and the host
 * (run/vm.verified_frames) reads only frames that do. One writer for both, included by each. */
#ifndef ABIBENCH_FRAME_H
#define ABIBENCH_FRAME_H

#include <stdio.h>
#include <string.h>

static unsigned frame_hash = 2166136261u;  /* FNV-1a of the frame so far: its last field */
static long frame_count;                    /* frames ended so far */

static inline void frame_put(FILE *f, int c) {
    frame_hash = (frame_hash ^ (unsigned char)c) * 16777619u;
    fputc(c, f);
}

static inline void frame_text(FILE *f, const char *s) {
    while (*s) frame_put(f, *s++);
}

static inline void frame_hex(FILE *f, const void *data, size_t n) {
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = data;
    if (n == 0) { frame_put(f, '-'); return; }  /* an empty field stays a field */
    for (size_t i = 0; i < n; i++) {
        frame_put(f, digits[p[i] >> 4]);
        frame_put(f, digits[p[i] & 15]);
    }
}

static inline void frame_end(FILE *f) {
    fprintf(f, " %08x\n", frame_hash);
    fflush(f);
    frame_hash = 2166136261u;
    frame_count++;
}

#endif
