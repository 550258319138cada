#ifndef FNV_H
#define FNV_H
#include <stddef.h>
#include <stdint.h>

/* FNV-1a over buf, its offset basis perturbed by seed. */
uint64_t fnv1a64(const unsigned char *buf, size_t n, unsigned seed);
#endif
