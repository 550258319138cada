/*
 * footprint: how much memory and time one small record costs in a pointer-
 * linked structure, for one N per run; abibench runs it for N = 10^4 ... 10^7
 * and plots peak RSS per element and time per element against N per ABI.
 *
 *   list  a singly linked list: {key, value, next}, pushed at the head, then
 *         walked once.
 *   tree  an AVL tree: {key, value, left, right, balance}, keys inserted in
 *         pseudo-random order, then looked up in another pseudo-random order
 *         (min(N, 10^6) lookups).
 *   hash  a chained hash map: {key, value, next} nodes and one bucket pointer
 *         per element (power-of-two table), then min(N, 10^6) lookups.
 *
 * Every record is its own malloc, as in most real programs: malloc's chunk
 * rounding is part of the cost (a 12-byte ILP32 node takes a 16-byte chunk,
 * its 16-byte LP64 twin a 32-byte one), so the ABIs differ by more than the
 * pointer width alone.  Peak RSS is measured by abibench's launcher for the
 * whole process; this program also prints its own VmHWM and the resident
 * size before building (baseline_kb) so the per-element cost can be taken
 * net of the program's fixed part.
 *
 * Keys come from a bijective 32-bit mixer of the index, so they are distinct
 * and the same on every ABI; the checksum folds the values found.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char micro_prog[] = "footprint";
#include "micro.h"

/* Lookups are a sample: a million random probes time a lookup as well as
 * ten million do, and at 10^7 tree nodes each probe is ~20 cache misses. */
#define MAX_QUERIES 1000000u

#define KEY_SALT 0x2545f491u
#define QUERY_SALT 0x68e31da4u

static uint32_t key_of(uint32_t i) { return mix32(i ^ KEY_SALT); }
static uint32_t value_of(uint32_t i) { return mix32(i * 0x9e3779b9u + 1u); }

/* The i-th query visits the elements in a different pseudo-random order from
 * insertion.  An odd multiplier is a bijection modulo 2^32, not modulo n, so
 * the index is reduced by multiply-shift: every query hits a present key,
 * though not each exactly once, which is all the timing needs. */
static uint32_t query_index(uint32_t q, uint32_t n)
{
    return (uint32_t)(((uint64_t)mix32(q ^ QUERY_SALT) * n) >> 32);
}

static long status_kb(const char *field)
{
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    FILE *f;

    /* An instruction-counting run (abibench sets ABIBENCH_COUNTING) reads nothing that
     * varies from run to run: /proc's numbers would change the count. It prints 0. */
    if (micro_counting())
        return 0;
    f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, field, len) == 0) {
            kb = strtol(line + len, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* ------------------------------------------------------------------- list */

struct lnode {
    uint32_t key;
    uint32_t value;
    struct lnode *next;
};

/* ------------------------------------------------------------------- tree */

struct tnode {
    uint32_t key;
    uint32_t value;
    struct tnode *link[2]; /* 0: smaller keys, 1: larger */
    int32_t bal;           /* height(link[1]) - height(link[0]), in -1..1 */
};

#define MAX_DEPTH 64 /* an AVL tree of 2^32 nodes is at most 46 deep */

/* Iterative insertion with balance factors: only the path from the deepest
 * unbalanced ancestor down to the new leaf is touched, so an insert costs one
 * search plus O(1) writes, not a re-read of every sibling on the way up. */
static void tree_insert(struct tnode **root, struct tnode *n)
{
    n->link[0] = n->link[1] = NULL;
    n->bal = 0;
    if (*root == NULL) {
        *root = n;
        return;
    }
    struct tnode **yp = root, *y = *root, **pp = root;
    unsigned char dir[MAX_DEPTH];
    int k = 0;
    for (struct tnode *p = *root; p != NULL; p = *pp) {
        int d = n->key > p->key; /* keys are distinct */
        if (p->bal != 0) {
            /* The deepest node that can go out of balance: rotations, if
             * any, happen here and nowhere above. */
            yp = pp;
            y = p;
            k = 0;
        }
        dir[k++] = (unsigned char)d;
        pp = &p->link[d];
    }
    *pp = n;

    struct tnode *p = y;
    for (int i = 0; p != n; p = p->link[dir[i++]])
        p->bal += dir[i] ? 1 : -1;

    if (y->bal == 2 || y->bal == -2) {
        const int d = y->bal > 0;          /* the heavy side */
        const int s = d ? 1 : -1;
        struct tnode *x = y->link[d], *w;
        if (x->bal == s) {                  /* single rotation */
            w = x;
            y->link[d] = x->link[!d];
            x->link[!d] = y;
            x->bal = y->bal = 0;
        } else {                            /* double rotation through w */
            w = x->link[!d];
            x->link[!d] = w->link[d];
            w->link[d] = x;
            y->link[d] = w->link[!d];
            w->link[!d] = y;
            x->bal = w->bal == -s ? s : 0;
            y->bal = w->bal == s ? -s : 0;
            w->bal = 0;
        }
        *yp = w;
    }
}

static int32_t tree_height(const struct tnode *t)
{
    /* Following the taller child at every node walks a longest path. */
    int32_t h = 0;
    for (; t != NULL; t = t->link[t->bal > 0])
        h++;
    return h;
}

/* ------------------------------------------------------------------- main */

struct result {
    double build_s, access_s;
    uint64_t hash;
    uint32_t found, queries; /* a list is walked whole, so there found == queries == n */
    long hwm_kb;
    unsigned node_bytes;
    uint32_t extra; /* tree height or hash buckets */
};

static void run_list(uint32_t n, struct result *r)
{
    struct lnode *head = NULL;
    double t0 = now_s();
    for (uint32_t i = 0; i < n; i++) {
        struct lnode *node = xmalloc_hint(sizeof *node, "a list node", "lower --n");
        node->key = key_of(i);
        node->value = value_of(i);
        node->next = head;
        head = node;
    }
    r->build_s = now_s() - t0;
    t0 = now_s();
    uint64_t h = 0;
    uint32_t seen = 0;
    for (const struct lnode *p = head; p != NULL; p = p->next) {
        h = (h ^ p->value) * 0x100000001b3ull;
        seen++;
    }
    r->access_s = now_s() - t0;
    r->hwm_kb = status_kb("VmHWM:");
    r->hash = h;
    r->found = seen;
    r->queries = seen;
    r->node_bytes = (unsigned)sizeof(struct lnode);
    r->extra = 0;
    while (head != NULL) {
        struct lnode *next = head->next;
        free(head);
        head = next;
    }
}

static void free_tree(struct tnode *t)
{
    /* Iterative: a freed node's right subtree is rotated onto the left spine,
     * so no recursion and no stack beyond one pointer. */
    while (t != NULL) {
        if (t->link[0] != NULL) {
            struct tnode *l = t->link[0];
            t->link[0] = l->link[1];
            l->link[1] = t;
            t = l;
        } else {
            struct tnode *r = t->link[1];
            free(t);
            t = r;
        }
    }
}

static void run_tree(uint32_t n, struct result *r)
{
    struct tnode *root = NULL;
    double t0 = now_s();
    for (uint32_t i = 0; i < n; i++) {
        struct tnode *node = xmalloc_hint(sizeof *node, "a tree node", "lower --n");
        node->key = key_of(i);
        node->value = value_of(i);
        tree_insert(&root, node);
    }
    r->build_s = now_s() - t0;
    t0 = now_s();
    uint64_t h = 0;
    uint32_t found = 0;
    const uint32_t queries = n < MAX_QUERIES ? n : MAX_QUERIES;
    for (uint32_t q = 0; q < queries; q++) {
        const uint32_t key = key_of(query_index(q, n));
        const struct tnode *t = root;
        while (t != NULL && t->key != key)
            t = t->link[key > t->key];
        if (t != NULL) {
            found++;
            h = (h ^ t->value) * 0x100000001b3ull;
        }
    }
    r->access_s = now_s() - t0;
    r->hwm_kb = status_kb("VmHWM:");
    r->hash = h;
    r->found = found;
    r->queries = queries;
    r->node_bytes = (unsigned)sizeof(struct tnode);
    r->extra = (uint32_t)tree_height(root);
    free_tree(root);
}

static void run_hash(uint32_t n, struct result *r)
{
    unsigned bits = 1;
    while (bits < 31 && (1u << bits) < n)
        bits++;
    const uint32_t nb = 1u << bits;
    double t0 = now_s();
    /* The table is part of the structure, so its allocation is timed too. */
    struct lnode **buckets = calloc(nb, sizeof *buckets);
    if (buckets == NULL) {
        fprintf(stderr, "footprint: out of memory allocating %" PRIu32 " hash buckets: lower "
                "--n\n", nb);
        exit(1);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct lnode *node = xmalloc_hint(sizeof *node, "a hash node", "lower --n");
        node->key = key_of(i);
        node->value = value_of(i);
        uint32_t b = (node->key * 0x9e3779b1u) >> (32 - bits);
        node->next = buckets[b];
        buckets[b] = node;
    }
    r->build_s = now_s() - t0;
    t0 = now_s();
    uint64_t h = 0;
    uint32_t found = 0;
    const uint32_t queries = n < MAX_QUERIES ? n : MAX_QUERIES;
    for (uint32_t q = 0; q < queries; q++) {
        const uint32_t key = key_of(query_index(q, n));
        const struct lnode *p = buckets[(key * 0x9e3779b1u) >> (32 - bits)];
        while (p != NULL && p->key != key)
            p = p->next;
        if (p != NULL) {
            found++;
            h = (h ^ p->value) * 0x100000001b3ull;
        }
    }
    r->access_s = now_s() - t0;
    r->hwm_kb = status_kb("VmHWM:");
    r->hash = h;
    r->found = found;
    r->queries = queries;
    r->node_bytes = (unsigned)sizeof(struct lnode);
    r->extra = nb;
    for (uint32_t b = 0; b < nb; b++) {
        struct lnode *p = buckets[b];
        while (p != NULL) {
            struct lnode *next = p->next;
            free(p);
            p = next;
        }
    }
    free(buckets);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: footprint --struct list|tree|hash [--n N]\n"
               "  --struct S  the structure to build\n"
               "  --n N       records, 1..100000000 (default 1000000)\n");
}

int main(int argc, char **argv)
{
    const char *kind = NULL;
    uint32_t n = 1000000u;

    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--struct") == 0) {
            if (v == NULL) {
                fprintf(stderr, "footprint: --struct needs a name: list, tree or hash\n");
                return 2;
            }
            kind = v;
            a++;
        } else if (strcmp(argv[a], "--n") == 0) {
            /* 10^8 records are ~5 GB as LP64: beyond that a sweep is not useful here. */
            if (parse_u32("--n", v, 1u, 100000000u, &n) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "footprint: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }
    if (kind == NULL) {
        fprintf(stderr, "footprint: say which structure to build: --struct list, tree or hash\n");
        return 2;
    }

    long baseline = status_kb("VmRSS:");
    struct result r;
    if (strcmp(kind, "list") == 0)
        run_list(n, &r);
    else if (strcmp(kind, "tree") == 0)
        run_tree(n, &r);
    else if (strcmp(kind, "hash") == 0)
        run_hash(n, &r);
    else {
        fprintf(stderr, "footprint: unknown structure '%s': choose list, tree or hash\n", kind);
        return 2;
    }
    if (r.found != r.queries || (strcmp(kind, "list") == 0 && r.found != n)) {
        fprintf(stderr, "footprint: self-check failed: found %" PRIu32 " of %" PRIu32
                " records\n", r.found, r.queries);
        return 1;
    }

    printf("struct: %s\n", kind);
    printf("n: %" PRIu32 "\n", n);
    printf("node_bytes: %u\n", r.node_bytes);
    printf("pointer_bytes: %u\n", (unsigned)sizeof(void *));
    if (strcmp(kind, "tree") == 0)
        printf("tree_height: %" PRIu32 "\n", r.extra);
    if (strcmp(kind, "hash") == 0)
        printf("hash_buckets: %" PRIu32 "\n", r.extra);
    printf("build_s: %.6f\n", r.build_s);
    printf("access_s: %.6f\n", r.access_s);
    printf("build_ns: %.3f\n", r.build_s / n * 1e9);
    printf("queries: %" PRIu32 "\n", r.queries);
    printf("access_ns: %.3f\n", r.access_s / r.queries * 1e9);
    /* Build plus one access per element: what an element costs to insert
     * and then use once. */
    printf("ns_per_element: %.3f\n", (r.build_s / n + r.access_s / r.queries) * 1e9);
    printf("baseline_kb: %ld\n", baseline);
    printf("vmhwm_kb: %ld\n", r.hwm_kb);
    printf("bytes_per_element: %.2f\n",
           r.hwm_kb > baseline ? (double)(r.hwm_kb - baseline) * 1024.0 / n : 0.0);
    printf("checksum: %s-%" PRIu32 "-%016" PRIx64 "\n", kind, n, mix64(r.hash ^ n));
    return 0;
}
