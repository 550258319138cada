// A Go benchmark of your own: a hash of 64-bit integers and a sort of a slice of them. On
// GOARCH=386 every int64 multiply and shift is done in 32-bit halves, and pointers and ints
// are half the size.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gobench N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "N must be a positive integer")
		os.Exit(2)
	}
	start := time.Now()
	xs := make([]uint64, n)
	s := uint64(88172645463325252)
	for i := range xs {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		xs[i] = s
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	h := uint64(14695981039346656037)
	for _, x := range xs {
		h = (h ^ x) * 1099511628211
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("checksum: %016x\n", h)
	fmt.Printf("rate: %.1f\n", float64(n)/secs)
}
