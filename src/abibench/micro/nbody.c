/*
 * nbody: the classic Jovian-planets simulation (Sun, Jupiter, Saturn, Uranus,
 * Neptune) with a symplectic Euler step, as in the Computer Language
 * Benchmarks Game.  It is almost pure double arithmetic plus one sqrt per
 * pair, so it shows the floating-point side of an ABI: i386 defaults to x87
 * (80-bit registers, 8-deep stack) while x86_64 and x32 use SSE2 with 16
 * registers.
 *
 * The energy is printed with 9 decimals, the Benchmarks Game convention.
 * x87 keeps intermediates in extended precision, so the two ABIs round
 * differently at every step; the checksum line is the 9-decimal energy and
 * is compared across ABIs, which makes any drift visible rather than hidden.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char micro_prog[] = "nbody";
#include "micro.h"

#define NBODIES 5

/* Written out rather than computed so every ABI starts from identical bits. */
#define PI 3.141592653589793
#define SOLAR_MASS (4 * PI * PI)
#define DAYS_PER_YEAR 365.24

struct body {
    double x, y, z, vx, vy, vz, mass;
};

static struct body bodies[NBODIES] = {
    /* Sun */
    {0, 0, 0, 0, 0, 0, SOLAR_MASS},
    /* Jupiter */
    {4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
     1.66007664274403694e-03 * DAYS_PER_YEAR, 7.69901118419740425e-03 * DAYS_PER_YEAR,
     -6.90460016972063023e-05 * DAYS_PER_YEAR, 9.54791938424326609e-04 * SOLAR_MASS},
    /* Saturn */
    {8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
     -2.76742510726862411e-03 * DAYS_PER_YEAR, 4.99852801234917238e-03 * DAYS_PER_YEAR,
     2.30417297573763929e-05 * DAYS_PER_YEAR, 2.85885980666130812e-04 * SOLAR_MASS},
    /* Uranus */
    {1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
     2.96460137564761618e-03 * DAYS_PER_YEAR, 2.37847173959480950e-03 * DAYS_PER_YEAR,
     -2.96589568540237556e-05 * DAYS_PER_YEAR, 4.36624404335156298e-05 * SOLAR_MASS},
    /* Neptune */
    {1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
     2.68067772490389322e-03 * DAYS_PER_YEAR, 1.62824170038242295e-03 * DAYS_PER_YEAR,
     -9.51592254519715870e-05 * DAYS_PER_YEAR, 5.15138902046611451e-05 * SOLAR_MASS},
};

static void advance(struct body *b, double dt)
{
    for (int i = 0; i < NBODIES; i++) {
        for (int j = i + 1; j < NBODIES; j++) {
            double dx = b[i].x - b[j].x;
            double dy = b[i].y - b[j].y;
            double dz = b[i].z - b[j].z;
            double d2 = dx * dx + dy * dy + dz * dz;
            double mag = dt / (d2 * sqrt(d2));
            b[i].vx -= dx * b[j].mass * mag;
            b[i].vy -= dy * b[j].mass * mag;
            b[i].vz -= dz * b[j].mass * mag;
            b[j].vx += dx * b[i].mass * mag;
            b[j].vy += dy * b[i].mass * mag;
            b[j].vz += dz * b[i].mass * mag;
        }
    }
    for (int i = 0; i < NBODIES; i++) {
        b[i].x += dt * b[i].vx;
        b[i].y += dt * b[i].vy;
        b[i].z += dt * b[i].vz;
    }
}

static double energy(const struct body *b)
{
    double e = 0.0;
    for (int i = 0; i < NBODIES; i++) {
        e += 0.5 * b[i].mass * (b[i].vx * b[i].vx + b[i].vy * b[i].vy + b[i].vz * b[i].vz);
        for (int j = i + 1; j < NBODIES; j++) {
            double dx = b[i].x - b[j].x;
            double dy = b[i].y - b[j].y;
            double dz = b[i].z - b[j].z;
            e -= b[i].mass * b[j].mass / sqrt(dx * dx + dy * dy + dz * dz);
        }
    }
    return e;
}

/* Move the Sun so total momentum is zero; otherwise the system drifts. */
static void offset_momentum(struct body *b)
{
    double px = 0, py = 0, pz = 0;
    for (int i = 0; i < NBODIES; i++) {
        px += b[i].vx * b[i].mass;
        py += b[i].vy * b[i].mass;
        pz += b[i].vz * b[i].mass;
    }
    b[0].vx = -px / SOLAR_MASS;
    b[0].vy = -py / SOLAR_MASS;
    b[0].vz = -pz / SOLAR_MASS;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nbody [--steps N]\n"
               "  --steps N  integration steps of dt=0.01 (default 12000000, 1..4294967295)\n");
}

int main(int argc, char **argv)
{
    uint32_t steps = 12000000u;
    const double dt = 0.01;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--steps") == 0) {
            if (parse_u32("--steps", a + 1 < argc ? argv[++a] : NULL, 1u, UINT32_MAX, &steps) != 0)
                return 2;
        } else {
            fprintf(stderr, "nbody: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }

    offset_momentum(bodies);
    double e0 = energy(bodies);
    double t0 = now_s();
    for (uint32_t s = 0; s < steps; s++)
        advance(bodies, dt);
    double elapsed = now_s() - t0;
    double e1 = energy(bodies);

    printf("steps: %" PRIu32 "\n", steps);
    printf("energy_start: %.9f\n", e0);
    printf("energy_end: %.9f\n", e1);
    /* %a shows the exact bits, so a difference hidden by 9 decimals is still
     * on record (informative, not compared). */
    printf("energy_end_bits: %a\n", e1);
    printf("elapsed_s: %.6f\n", elapsed);
    printf("steps_per_s: %.1f\n", steps / elapsed);
    printf("checksum: %.9f\n", e1);
    return 0;
}
