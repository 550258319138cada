/* Pointer chasing through malloc'd nodes of three pointers and a key: 16-byte chunks on i386,
   32-byte ones on x86_64, so 300,000 nodes fit the simulated 8 MiB last-level cache on i386
   (4.8 MB) and do not on x86_64 (9.6 MB). The walk order is shuffled so every step is a miss
   where the nodes do not fit. */
#include <stdio.h>
#include <stdlib.h>
struct node { struct node *next, *left, *right; unsigned key; };
#define NODES 300000
__attribute__((noinline)) static unsigned long walk(struct node *p, int rounds) {
    unsigned long s = 0;
    for (int r = 0; r < rounds; r++)
        for (struct node *q = p; q; q = q->next) s += q->key;
    return s;
}
int main(void) {
    static struct node *all[NODES];
    unsigned x = 2463534242u;
    for (int i = 0; i < NODES; i++) { all[i] = malloc(sizeof(struct node)); all[i]->key = (unsigned)i; all[i]->left = all[i]->right = NULL; }
    for (int i = NODES - 1; i > 0; i--) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; int j = (int)(x % (unsigned)(i + 1)); struct node *t = all[i]; all[i] = all[j]; all[j] = t; }
    for (int i = 0; i < NODES - 1; i++) all[i]->next = all[i + 1];
    all[NODES - 1]->next = NULL;
    printf("checksum: %lu\n", walk(all[0], 4));
    return 0;
}
