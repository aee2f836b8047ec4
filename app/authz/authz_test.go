package authz

import "testing"

func TestAtLeast(t *testing.T) {
	tests := []struct {
		perm, role, min string
		want            bool
	}{
		{"admin", "admin", "write", true},
		{"write", "maintain", "write", true},
		{"write", "write", "write", true},
		{"read", "triage", "write", false},
		{"read", "read", "write", false},
		{"none", "", "write", false},
		{"write", "custom-role", "write", true},
		{"bogus", "", "read", false},
		{"write", "", "maintain", false},
		{"admin", "", "none", false},
		{"admin", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.perm+"/"+tt.role+">="+tt.min, func(t *testing.T) {
			if got := AtLeast(Effective(tt.perm, tt.role), tt.min); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBots(t *testing.T) {
	tests := []struct {
		name, login, typ string
		allowed          []string
		bot, ok          bool
	}{
		{"self never", "bumper[bot]", "Bot", []string{"bumper[bot]"}, true, false},
		{"listed bot", "renovate[bot]", "Bot", []string{"Renovate[bot]"}, true, true},
		{"unlisted bot", "dependabot[bot]", "Bot", nil, true, false},
		{"human", "maintainer", "User", nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if IsBot(tt.login, tt.typ) != tt.bot {
				t.Fatalf("IsBot = %v", !tt.bot)
			}
			if BotAllowed(tt.login, "bumper[bot]", tt.allowed) != tt.ok {
				t.Fatalf("BotAllowed = %v", !tt.ok)
			}
		})
	}
}
