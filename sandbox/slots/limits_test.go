package slots

import (
	"strings"
	"testing"
)

// TestFits: a VM fits when one more VM and its memory both stay within the limits.
func TestFits(t *testing.T) {
	lim := Limits{MaxVMs: 2, MemoryMB: 3072}
	cases := []struct {
		name string
		used Usage
		need int
		want bool
	}{
		{"an idle host", Usage{}, 1024, true},
		{"a VM as large as the host allows", Usage{}, 3072, true},
		{"room for one more by count and memory", Usage{VMs: 1, MemoryMB: 1024}, 2048, true},
		{"the count is reached", Usage{VMs: 2, MemoryMB: 1024}, 512, false},
		{"the memory would be exceeded by 1 MiB", Usage{VMs: 1, MemoryMB: 2048}, 1025, false},
		{"the memory is exactly used up", Usage{VMs: 1, MemoryMB: 2048}, 1024, true},
		{"waiting runs do not count as running", Usage{VMs: 1, MemoryMB: 1024, Waiting: 5}, 1024, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := lim.Fits(tt.used, tt.need); got != tt.want {
				t.Fatalf("Fits(%+v, %d) = %v; want %v", tt.used, tt.need, got, tt.want)
			}
		})
	}
}

// TestFromEnv: the runner host's variables set the limits; unset ones take the
// machine's defaults; a bad value is an error naming the variable and what to set.
func TestFromEnv(t *testing.T) {
	m := Machine{CPUs: 4, MemTotalMB: 8192}
	cases := []struct {
		name    string
		env     map[string]string
		want    Limits
		errHas  []string
		machine *Machine
	}{
		{name: "unset: one VM per CPU, three quarters of the memory", want: Limits{MaxVMs: 4, MemoryMB: 6144, Dir: DefaultDir}},
		{name: "a small host keeps 1 GiB", machine: &Machine{CPUs: 1, MemTotalMB: 2048}, want: Limits{MaxVMs: 1, MemoryMB: 1024, Dir: DefaultDir}},
		{name: "no CPU count still allows one VM", machine: &Machine{CPUs: 0, MemTotalMB: 8192}, want: Limits{MaxVMs: 1, MemoryMB: 6144, Dir: DefaultDir}},
		{name: "set", env: map[string]string{EnvMaxVMs: "3", EnvMemoryMB: " 4096 ", EnvDir: "/var/lib/bumper/slots/"},
			want: Limits{MaxVMs: 3, MemoryMB: 4096, Dir: "/var/lib/bumper/slots"}},
		{name: "empty is unset", env: map[string]string{EnvMaxVMs: "", EnvMemoryMB: ""}, want: Limits{MaxVMs: 4, MemoryMB: 6144, Dir: DefaultDir}},
		{name: "no VMs", env: map[string]string{EnvMaxVMs: "0"}, errHas: []string{EnvMaxVMs + `="0"`, "from 1 to 1024", "unset: 4"}},
		{name: "not a number", env: map[string]string{EnvMaxVMs: "two"}, errHas: []string{EnvMaxVMs + `="two"`, "whole number"}},
		{name: "too many", env: map[string]string{EnvMaxVMs: "100000"}, errHas: []string{EnvMaxVMs}},
		{name: "memory with a unit", env: map[string]string{EnvMemoryMB: "4G"}, errHas: []string{EnvMemoryMB + `="4G"`, "MiB", "unset: 6144"}},
		{name: "memory below a VM's least", env: map[string]string{EnvMemoryMB: "64"}, errHas: []string{EnvMemoryMB + `="64"`, "from 128"}},
		{name: "memory beyond the host's", env: map[string]string{EnvMemoryMB: "9000"}, errHas: []string{EnvMemoryMB + `="9000"`, "swap", "at most 8192"}},
		{name: "a relative directory", env: map[string]string{EnvDir: "slots"}, errHas: []string{EnvDir + `="slots"`, "absolute"}},
		{name: "every bad value at once", env: map[string]string{EnvMaxVMs: "-1", EnvMemoryMB: "x", EnvDir: "."}, errHas: []string{EnvMaxVMs, EnvMemoryMB, EnvDir}},
		{name: "a host too small for the default", machine: &Machine{CPUs: 2, MemTotalMB: 1100}, errHas: []string{"set " + EnvMemoryMB}},
		{name: "a host too small, with the variable set", machine: &Machine{CPUs: 2, MemTotalMB: 1100}, env: map[string]string{EnvMemoryMB: "512"},
			want: Limits{MaxVMs: 2, MemoryMB: 512, Dir: DefaultDir}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			mm := m
			if tt.machine != nil {
				mm = *tt.machine
			}
			got, err := FromEnv(func(k string) string { return tt.env[k] }, mm)
			if len(tt.errHas) > 0 {
				if err == nil {
					t.Fatalf("FromEnv = %+v; want an error", got)
				}
				for _, s := range tt.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("FromEnv = %+v; want %+v", got, tt.want)
			}
		})
	}
}

// TestThisMachine: the host's own figures are read.
func TestThisMachine(t *testing.T) {
	m, err := ThisMachine()
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUs < 1 || m.MemTotalMB < 1 {
		t.Fatalf("ThisMachine = %+v", m)
	}
}
