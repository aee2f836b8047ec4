package image

import "testing"

func TestResolvedIsReusedOnlyUnderTheSameAptState(t *testing.T) {
	dir := t.TempDir()
	r := resolved{AptState: "s1", KernelPackage: "linux-image-amd64",
		Kernel:  debPackage{Name: "linux-image-6.1.0-57-amd64", Version: "6.1.192-3"},
		Busybox: debPackage{Name: "busybox-static", Version: "1:1.35.0-4"}}
	if _, ok := loadResolved(dir, "linux-image-amd64", "s1"); ok {
		t.Fatal("a resolution was found before any was saved")
	}
	saveResolved(dir, r)
	tests := []struct {
		name, pkg, state string
		want             bool
	}{
		{"same state and package", "linux-image-amd64", "s1", true},
		{"apt state changed", "linux-image-amd64", "s2", false},
		{"other kernel package", "linux-image-cloud-amd64", "s1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := loadResolved(dir, tt.pkg, tt.state)
			if ok != tt.want {
				t.Fatalf("found = %v, want %v", ok, tt.want)
			}
			if ok && got != r {
				t.Errorf("got %+v, want %+v", got, r)
			}
		})
	}
	if aptState() == "" {
		t.Error("empty apt state fingerprint")
	}
}
