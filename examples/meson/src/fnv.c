#include "fnv.h"

uint64_t fnv1a64(const unsigned char *buf, size_t n, unsigned seed) {
    uint64_t h = 14695981039346656037ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= buf[i];
        h *= 1099511628211ull;
    }
    return h;
}
