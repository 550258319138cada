#ifndef VEC_H
#define VEC_H
#include <stddef.h>

struct body { double x[3], v[3], mass; };

void advance(struct body *bodies, size_t n, double dt);
double energy(const struct body *bodies, size_t n);
#endif
