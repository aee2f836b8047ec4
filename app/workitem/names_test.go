package workitem

import "testing"

func TestWorkBranch(t *testing.T) {
	tests := []struct {
		ref          string
		issue, tries int
		ok           bool
	}{
		{"bumper/12-3", 12, 3, true},
		{"bumper/12", 0, 0, false},
		{"bumper/x-1", 0, 0, false},
		{"bumper/0-1", 0, 0, false},
		{"feature/12-3", 0, 0, false},
		{"bumper/12-3-4", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			i, a, ok := WorkBranch(tt.ref)
			if ok != tt.ok || i != tt.issue || a != tt.tries {
				t.Fatalf("WorkBranch = %d, %d, %v", i, a, ok)
			}
		})
	}
}

func TestDispatchKey(t *testing.T) {
	if got := DispatchKey(7, "sha256:00ff", 2); got != "7-00ff-2" {
		t.Fatalf("DispatchKey = %q", got)
	}
	if DispatchKey(7, "sha256:00ff", 2) == DispatchKey(7, "sha256:00ff", 3) {
		t.Fatal("attempts share a dispatch key")
	}
}
