package rest

import (
	"net/http"

	"github.com/bumperdev/bumper/ghemu/apierr"
)

// getMeta is GET /meta (no credential needed), GitHub's "meta information": what a
// client asks first to learn that an address serves GitHub's REST API (GitHub
// Enterprise Server's tools probe HOST/api/v3/meta). The emulator has no password
// authentication, and its only addresses are the loopback ones it listens on.
func (a *API) getMeta(w http.ResponseWriter, _ *http.Request, _ *call) {
	local := []string{"127.0.0.1/32", "::1/128"}
	apierr.WriteJSON(w, http.StatusOK, map[string]any{
		"verifiable_password_authentication": false,
		"hooks":                              local, "web": local, "api": local, "git": local, "actions": local,
	})
}
