package fidelity

import "testing"

func TestStringFormats(t *testing.T) {
	tests := []struct {
		name  string
		check func(string) error
		value string
		ok    bool
	}{
		{"date-time UTC", validateDateTime, "2011-04-14T16:00:49Z", true},
		{"date-time offset and fraction", validateDateTime, "2011-04-14T16:00:49.5+02:00", true},
		{"date-time space", validateDateTime, "2011-04-14 16:00:49Z", false},
		{"date-time no zone", validateDateTime, "2011-04-14T16:00:49", false},
		{"date-time impossible day", validateDateTime, "2011-02-30T16:00:49Z", false},
		{"date", validateDate, "2011-04-14", true},
		{"date with time", validateDate, "2011-04-14T16:00:49Z", false},
		{"uri https", validateURI, "https://api.github.com/repos/o/r/issues/1", true},
		{"uri mailto", validateURI, "mailto:octocat@github.com", true},
		{"uri relative", validateURI, "/repos/o/r", false},
		{"uri empty", validateURI, "", false},
		{"uri bad escape", validateURI, "https://x/%zz", false},
		{"template path expansion", validateURITemplate, "https://api.github.com/users/o/following{/other_user}", true},
		{"template two expansions", validateURITemplate, "https://api.github.com/repos/o/r/{archive_format}{/ref}", true},
		{"template query expansion", validateURITemplate, "https://api.github.com/notifications{?since,all}", true},
		{"template plain uri", validateURITemplate, "https://api.github.com/repos/o/r", true},
		{"template unclosed", validateURITemplate, "https://api.github.com/users{/x", false},
		{"template stray close", validateURITemplate, "https://api.github.com/users}", false},
		{"template nested", validateURITemplate, "https://api.github.com/{a{b}}", false},
		{"template relative", validateURITemplate, "users{/x}", false},
		{"email", validateEmail, "octocat@github.com", true},
		{"email noreply", validateEmail, "1+octocat@users.noreply.github.com", true},
		{"email display name", validateEmail, "Octo Cat <octocat@github.com>", false},
		{"email no at", validateEmail, "octocat", false},
		{"webhook date-time RFC 3339", validateWebhookDateTime, "2019-05-15T15:20:33Z", true},
		{"webhook date-time offset", validateWebhookDateTime, "2019-05-15T15:20:33-07:00", true},
		{"webhook date-time fraction", validateWebhookDateTime, "2019-05-15T15:20:33.123Z", true},
		{"webhook date-time space, no zone", validateWebhookDateTime, "2018-04-25 20:42:10", true},
		{"webhook date-time date only", validateWebhookDateTime, "2018-04-25", false},
		{"webhook date-time impossible day", validateWebhookDateTime, "2018-02-30T10:00:00Z", false},
		{"webhook date-time hour 25", validateWebhookDateTime, "2018-02-10T25:00:00Z", false},
		{"webhook date-time words", validateWebhookDateTime, "yesterday", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.value)
			if tt.ok && err != nil {
				t.Errorf("%q rejected: %v", tt.value, err)
			}
			if !tt.ok && err == nil {
				t.Errorf("%q accepted", tt.value)
			}
		})
	}
}
