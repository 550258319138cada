/*
 * ptrtree: a pointer-heavy index, the case where LP64 is said to cost memory.
 *
 * N records are malloc'd one by one and linked into two indexes at once: an
 * unbalanced binary search tree over pseudo-random keys and a chained hash
 * table.  Each node carries three pointers, so it is 20 bytes on ILP32 and
 * 32 bytes on LP64.  The hash chain pointer is not decoration: with only the
 * two child pointers (16 vs 24 bytes) glibc rounds both ABIs up to the same
 * 32-byte malloc chunk and the memory difference disappears.
 *
 * Keys come from a bijective 32-bit mixer applied to the record index, so
 * every key is distinct, absent keys are known to be absent (indexes N..2N-1),
 * and no key array is needed that would dilute the pointer overhead.  All
 * data that feeds the checksum uses fixed-width types so i386, x32 and x86_64
 * do exactly the same work.
 *
 * The default is 500k nodes rather than millions because every tree level is
 * a dependent cache miss: 2M nodes took ~8 s per run on the 2-core reference
 * VM, too long for a suite that repeats each run a dozen times per ABI.  At
 * 500k the LP64 working set (~28 MB) sits at the edge of a 32 MB L3 while
 * the ILP32 one (~19 MB) fits, which is exactly the effect under study.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char micro_prog[] = "ptrtree";
#include "micro.h"

struct node {
    uint32_t key;
    uint32_t value;
    struct node *left;
    struct node *right;
    struct node *next; /* hash chain */
};

/* Salts keep the key, value and query streams independent of each other. */
#define KEY_SALT 0x2545f491u
#define VALUE_SALT 0x9e3779b9u
#define QUERY_SALT 0x68e31da4u
#define PRESENT_SALT 0xb5297a4du

static uint32_t key_of(uint32_t i) { return mix32(i ^ KEY_SALT); }
static uint32_t value_of(uint32_t i) { return mix32(i * VALUE_SALT + 1u); }

/* A 32x32->64 multiply maps a hash onto [0, n) without a 64-bit division,
 * which would be a libgcc call on i386 and bias the query timing. */
static uint32_t scale32(uint32_t h, uint32_t n)
{
    return (uint32_t)(((uint64_t)h * n) >> 32);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ptrtree [--nodes N] [--queries Q]\n"
               "  --nodes N    records to insert (default 500000, 1..2147483647)\n"
               "  --queries Q  random lookups, half present (default 0 = same as N)\n");
}

static long vmhwm_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f;

    /* An instruction-counting run (abibench sets ABIBENCH_COUNTING) reads nothing that
     * varies from run to run: /proc's numbers would change the count. It prints 0. */
    if (micro_counting())
        return 0;
    f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

static void oom(const char *what)
{
    fprintf(stderr, "ptrtree: out of memory allocating %s\n", what);
    exit(1);
}

int main(int argc, char **argv)
{
    uint32_t nodes = 500000u, queries = 0;

    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[a], "--nodes") == 0) {
            /* 2N must stay below 2^32 so absent keys never collide with present ones. */
            if (parse_u32("--nodes", a + 1 < argc ? argv[a + 1] : NULL, 1u,
                          2147483647u, &nodes) != 0)
                return 2;
            a++;
        } else if (strcmp(argv[a], "--queries") == 0) {
            /* 0 means "same as --nodes", so a profile can pass the option
             * unconditionally and still scale with --nodes alone. */
            if (parse_u32("--queries", a + 1 < argc ? argv[a + 1] : NULL, 0u,
                          4294967295u, &queries) != 0)
                return 2;
            a++;
        } else {
            fprintf(stderr, "ptrtree: unknown option '%s' (try --help)\n", argv[a]);
            return 2;
        }
    }
    if (queries == 0)
        queries = nodes;

    /* Power-of-two bucket count near N keeps chains short and the index a
     * multiply-shift, identical on every ABI.  The cap keeps the bucket array
     * addressable on ILP32; beyond it chains just grow longer. */
    unsigned hbits = 1;
    while (hbits < 28 && (1u << hbits) < nodes)
        hbits++;
    uint32_t nbuckets = 1u << hbits;
    struct node **buckets = calloc(nbuckets, sizeof *buckets);
    if (buckets == NULL)
        oom("hash buckets");

    /* ---- build ---- */
    struct node *root = NULL;
    unsigned height = 0;
    double t0 = now_s();
    for (uint32_t i = 0; i < nodes; i++) {
        struct node *n = malloc(sizeof *n);
        if (n == NULL)
            oom("a node");
        n->key = key_of(i);
        n->value = value_of(i);
        n->left = n->right = NULL;

        struct node **link = &root;
        unsigned depth = 1;
        while (*link != NULL) {
            link = n->key < (*link)->key ? &(*link)->left : &(*link)->right;
            depth++;
        }
        *link = n;
        if (depth > height)
            height = depth;

        uint32_t b = (n->key * 0x9e3779b1u) >> (32 - hbits);
        n->next = buckets[b];
        buckets[b] = n;
    }
    double t_build = now_s() - t0;

    /* ---- tree lookups ---- */
    uint64_t tree_hash = 0x6a09e667f3bcc908ull;
    uint32_t tree_found = 0, expected_found = 0;
    t0 = now_s();
    for (uint32_t q = 0; q < queries; q++) {
        uint32_t h = mix32(q ^ QUERY_SALT);
        int present = (mix32(q + PRESENT_SALT) & 1u) != 0;
        uint32_t idx = scale32(h, nodes) + (present ? 0u : nodes);
        uint32_t key = key_of(idx);
        const struct node *n = root;

        expected_found += (uint32_t)present;
        while (n != NULL && n->key != key)
            n = key < n->key ? n->left : n->right;
        if (n != NULL) {
            tree_found++;
            tree_hash = (tree_hash ^ n->value) * 0x100000001b3ull;
        }
    }
    double t_query = now_s() - t0;

    /* ---- hash lookups over the same nodes, same query stream ---- */
    uint64_t hash_hash = 0x6a09e667f3bcc908ull;
    uint32_t hash_found = 0;
    t0 = now_s();
    for (uint32_t q = 0; q < queries; q++) {
        uint32_t h = mix32(q ^ QUERY_SALT);
        int present = (mix32(q + PRESENT_SALT) & 1u) != 0;
        uint32_t idx = scale32(h, nodes) + (present ? 0u : nodes);
        uint32_t key = key_of(idx);
        const struct node *n = buckets[(key * 0x9e3779b1u) >> (32 - hbits)];

        while (n != NULL && n->key != key)
            n = n->next;
        if (n != NULL) {
            hash_found++;
            hash_hash = (hash_hash ^ n->value) * 0x100000001b3ull;
        }
    }
    double t_hash = now_s() - t0;

    /* ---- in-order traversal, freeing as we go ---- */
    /* height is the exact maximum depth, so this stack can never overflow. */
    struct node **stack = malloc((size_t)height * sizeof *stack);
    if (stack == NULL)
        oom("traversal stack");
    long hwm = vmhwm_kb(); /* before freeing: this is the peak of the data */
    uint64_t walk_hash = 0;
    uint32_t walked = 0, prev_key = 0;
    int ordered = 1;
    unsigned sp = 0;
    struct node *cur = root;
    t0 = now_s();
    while (cur != NULL || sp > 0) {
        while (cur != NULL) {
            stack[sp++] = cur;
            cur = cur->left;
        }
        cur = stack[--sp];
        if (walked > 0 && cur->key <= prev_key)
            ordered = 0;
        prev_key = cur->key;
        /* Position-weighted so that a mis-ordered traversal changes the sum. */
        walk_hash += mix64(((uint64_t)cur->key << 32 | cur->value) + walked);
        walked++;
        struct node *right = cur->right;
        free(cur); /* left subtree is done and right is saved */
        cur = right;
    }
    double t_free = now_s() - t0;
    free(stack);
    free(buckets);

    if (!ordered || walked != nodes || tree_found != expected_found ||
        hash_found != tree_found || hash_hash != tree_hash) {
        fprintf(stderr,
                "ptrtree: self-check failed: ordered=%d walked=%" PRIu32
                " found tree=%" PRIu32 " hash=%" PRIu32 " expected=%" PRIu32 "\n",
                ordered, walked, tree_found, hash_found, expected_found);
        return 1;
    }

    uint64_t sum = mix64(tree_hash);
    sum = mix64(sum ^ tree_found);
    sum = mix64(sum ^ walk_hash);
    sum = mix64(sum ^ nodes);

    printf("nodes: %" PRIu32 "\n", nodes);
    printf("queries: %" PRIu32 "\n", queries);
    printf("found: %" PRIu32 "\n", tree_found);
    printf("tree_height: %u\n", height);
    printf("hash_buckets: %" PRIu32 "\n", nbuckets);
    printf("node_bytes: %u\n", (unsigned)sizeof(struct node));
    printf("pointer_bytes: %u\n", (unsigned)sizeof(void *));
    printf("build_s: %.6f\n", t_build);
    printf("query_s: %.6f\n", t_query);
    printf("hash_query_s: %.6f\n", t_hash);
    printf("free_s: %.6f\n", t_free);
    printf("build_rate: %.1f\n", nodes / t_build);
    printf("query_rate: %.1f\n", queries / t_query);
    printf("hash_query_rate: %.1f\n", queries / t_hash);
    printf("vmhwm_kb: %ld\n", hwm);
    printf("checksum: %016llx\n", (unsigned long long)sum);
    return 0;
}
