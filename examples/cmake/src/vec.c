/* Double-precision n-body steps: x87 (i386's default -mfpmath=387) against SSE2 (x86_64). */
#include <math.h>
#include "vec.h"

void advance(struct body *b, size_t n, double dt) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            double d[3], d2 = 0.0;
            for (int k = 0; k < 3; k++) {
                d[k] = b[i].x[k] - b[j].x[k];
                d2 += d[k] * d[k];
            }
            double mag = dt / (d2 * sqrt(d2));
            for (int k = 0; k < 3; k++) {
                b[i].v[k] -= d[k] * b[j].mass * mag;
                b[j].v[k] += d[k] * b[i].mass * mag;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) b[i].x[k] += dt * b[i].v[k];
}

double energy(const struct body *b, size_t n) {
    double e = 0.0;
    for (size_t i = 0; i < n; i++) {
        e += 0.5 * b[i].mass * (b[i].v[0] * b[i].v[0] + b[i].v[1] * b[i].v[1] +
                                b[i].v[2] * b[i].v[2]);
        for (size_t j = i + 1; j < n; j++) {
            double d2 = 0.0;
            for (int k = 0; k < 3; k++) d2 += (b[i].x[k] - b[j].x[k]) * (b[i].x[k] - b[j].x[k]);
            e -= b[i].mass * b[j].mass / sqrt(d2);
        }
    }
    return e;
}
