package rest_test

import (
	"net/http"
	"testing"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// TestInstallationTokens: the control accessor lists a minted token with its scope, and
// shows it revoked once its holder revoked it as GitHub allows.
func TestInstallationTokens(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	tok := emutest.InstallationToken(t, e, ghemu.DefaultOrg, ghemu.DefaultRepo, map[string]string{"contents": "read"})
	find := func() ghemu.TokenInfo {
		for _, ti := range e.InstallationTokens() {
			if ti.Value == tok {
				return ti
			}
		}
		t.Fatal("the minted token is not listed")
		return ghemu.TokenInfo{}
	}
	ti := find()
	if ti.Revoked || len(ti.Repositories) != 1 || ti.Repositories[0] != ghemu.DefaultOrg+"/"+ghemu.DefaultRepo || ti.Permissions["contents"] != "read" {
		t.Fatalf("token info %+v", ti)
	}
	req, _ := http.NewRequest(http.MethodDelete, e.BaseURL()+"/installation/token", nil)
	req.Header.Set("Authorization", "token "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || !find().Revoked {
		t.Fatalf("DELETE /installation/token: %d; listed revoked: %v", resp.StatusCode, find().Revoked)
	}
}
