// Package newergo needs a Go newer than Debian bookworm's (1.19): iterators (1.23), range
// over an integer (1.22) and sync.WaitGroup.Go (1.25).
package newergo

import (
	"iter"
	"slices"
	"sync"
)

// Squares yields the squares of 0 to n-1.
func Squares(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i * i) {
				return
			}
		}
	}
}

// SumConcurrently adds the squares of 0 to n-1, one goroutine each.
func SumConcurrently(n int) int {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		sum int
	)
	for _, sq := range slices.Collect(Squares(n)) {
		wg.Go(func() {
			mu.Lock()
			defer mu.Unlock()
			sum += sq
		})
	}
	wg.Wait()
	return sum
}
