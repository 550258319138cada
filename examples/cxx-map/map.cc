// std::map<long, long> with n keys: every node holds two longs and three pointers, so a node is
// 24 bytes of payload on i386 and 48 on x86_64, and the tree outgrows the caches at a smaller n
// on x86_64. Inserts n pseudo-random keys, then looks up `lookups` of them (half present).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>

static std::uint64_t next(std::uint64_t &s) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s N LOOKUPS\n", argv[0]);
        return 2;
    }
    long n = std::atol(argv[1]);
    long lookups = std::atol(argv[2]);
    if (n < 1 || lookups < 1) {
        std::fprintf(stderr, "N and LOOKUPS must be positive\n");
        return 2;
    }
    std::map<long, long> m;
    std::uint64_t s = 88172645463325252ULL;
    for (long i = 0; i < n; i++) {
        m[static_cast<long>(next(s) % (4 * static_cast<std::uint64_t>(n)))] = i;
    }
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t sum = m.size();
    for (long i = 0; i < lookups; i++) {
        auto it = m.find(static_cast<long>(next(s) % (4 * static_cast<std::uint64_t>(n))));
        if (it != m.end()) sum = sum * 31 + static_cast<std::uint64_t>(it->second);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("checksum: %016llx\n", static_cast<unsigned long long>(sum));
    std::printf("rate: %.1f\n", secs > 0 ? lookups / secs : 0.0);
    return 0;
}
