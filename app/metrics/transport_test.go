package metrics

import (
	"net/http"
	"testing"
)

// TestAccount checks whose rate-limit budget a request is counted against: the App's
// JWT spends the App's, an installation token the account in the path, anything else
// nobody's (the gauge stays as it was rather than mixing budgets).
func TestAccount(t *testing.T) {
	const jwt = "Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2ln"
	tests := []struct {
		name, auth, url, want string
	}{
		{"App JWT on /app", jwt, "https://api.github.com/app/installations", "app"},
		{"App JWT on a repository's installation", jwt, "https://api.github.com/repos/Acme/widgets/installation", "app"},
		{"installation token on a repository", "token ghs_abc", "https://api.github.com/repos/Acme/widgets/issues/1", "acme"},
		{"installation token on an organisation", "Bearer ghs_abc", "https://ghe.example/api/v3/orgs/Acme/members", "acme"},
		{"installation token elsewhere", "token ghs_abc", "https://api.github.com/installation/token", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodGet, tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("Authorization", tt.auth)
			if got := account(r); got != tt.want {
				t.Fatalf("account = %q, want %q", got, tt.want)
			}
		})
	}
}
