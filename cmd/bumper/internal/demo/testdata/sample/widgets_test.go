package widgets

import "testing"

func TestTotal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		boxes []int
		want  int
	}{
		{"no boxes", nil, 0},
		{"one box", []int{5}, 5},
		{"three boxes", []int{3, 4, 2}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Total(tc.boxes); got != tc.want {
				t.Fatalf("Total(%v) = %d, want %d", tc.boxes, got, tc.want)
			}
		})
	}
}
