package state_test

import (
	"testing"

	"github.com/bumperdev/bumper/ghemu/state"
)

func TestRolesAndLevels(t *testing.T) {
	tests := []struct {
		name      string
		got, want bool
	}{
		{"a writer may triage", state.RoleAtLeast("write", "triage"), true},
		{"a reader may not write", state.RoleAtLeast("read", "write"), false},
		{"no role is below read", state.RoleAtLeast("", "read"), false},
		{"anyone passes no requirement", state.RoleAtLeast("", ""), true},
		{"admin is the top", state.RoleAtLeast("admin", "maintain"), true},
		{"write covers read", state.LevelAtLeast("write", "read"), true},
		{"read does not cover write", state.LevelAtLeast("read", "write"), false},
		{"no permission is below read", state.LevelAtLeast("", "read"), false},
		{"maintain is a role", state.ValidRole("maintain"), true},
		{"owner is not a role", state.ValidRole("owner"), false},
		{"the empty role is not one to give", state.ValidRole(""), false},
		{"timed_out is a conclusion", state.ValidConclusion("timed_out"), true},
		{"passed is not", state.ValidConclusion("passed"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
