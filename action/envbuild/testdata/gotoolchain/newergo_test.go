package newergo

import (
	"context"
	"slices"
	"testing"

	"golang.org/x/sync/errgroup"
)

func TestSquares(t *testing.T) {
	if got, want := slices.Collect(Squares(4)), []int{0, 1, 4, 9}; !slices.Equal(got, want) {
		t.Fatalf("Squares(4) = %v, want %v", got, want)
	}
}

func TestSumConcurrently(t *testing.T) {
	g, _ := errgroup.WithContext(context.Background())
	sums := make([]int, 3)
	for i := range sums {
		g.Go(func() error { sums[i] = SumConcurrently(10 * (i + 1)); return nil })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if want := []int{285, 2470, 8555}; !slices.Equal(sums, want) {
		t.Fatalf("sums = %v, want %v", sums, want)
	}
}
