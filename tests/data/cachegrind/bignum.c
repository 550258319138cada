/* Multi-precision multiplication on the C type of a machine word (unsigned long: 32 bits on
   i386, 64 on x86_64), the way OpenSSL's portable bignum code works: a 2048-bit number is 64
   words on i386 and 32 on x86_64, so i386 does about four times the word multiplications. */
#include <stdio.h>
#include <string.h>
typedef unsigned long word;
#if __SIZEOF_LONG__ == 8
typedef unsigned __int128 dword;
#else
typedef unsigned long long dword;
#endif
#define BITS 2048
#define N (BITS / (8 * sizeof(word)))
__attribute__((noinline)) static word mul_add_words(word *r, const word *a, int n, word w) {
    word carry = 0;
    for (int i = 0; i < n; i++) {
        dword t = (dword)a[i] * w + r[i] + carry;
        r[i] = (word)t;
        carry = (word)(t >> (8 * sizeof(word)));
    }
    return carry;
}
__attribute__((noinline)) static void mul(word *r, const word *a, const word *b) {
    memset(r, 0, 2 * N * sizeof(word));
    for (unsigned i = 0; i < N; i++) r[N + i] = mul_add_words(r + i, a, N, b[i]);
}
int main(void) {
    static word a[N], b[N], r[2 * N];
    unsigned long long x = 88172645463325252ULL, sum = 0;
    for (unsigned i = 0; i < N; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; a[i] = (word)x; b[i] = (word)(x >> 3); }
    for (int k = 0; k < 200; k++) { mul(r, a, b); a[k % N] ^= r[N]; }
    for (unsigned i = 0; i < 2 * N; i++) sum = sum * 31 + (unsigned char)r[i];
    printf("checksum: %llu\n", sum);
    return 0;
}
