package rest

import (
	"net/http"

	"github.com/bumperdev/bumper/ghemu/apierr"
)

// convertManifest is POST /app-manifests/{code}/conversions, the end of GitHub's App
// manifest flow (whose pages the web view serves): the code, once and within the hour,
// gives the App's private key, webhook secret and OAuth client secret.
func (a *API) convertManifest(w http.ResponseWriter, r *http.Request, c *call) {
	code := c.params["code"]
	mc := c.st.ManifestCode(code)
	if mc == nil || !c.st.Now().Before(mc.ExpiresAt) || mc.AppID != c.st.App().ID {
		apierr.Write(w, apierr.NotFound())
		return
	}
	c.st.DeleteManifestCode(code)
	out := c.rn.App()
	out["client_secret"] = mc.ClientSecret
	out["webhook_secret"] = mc.WebhookSecret
	out["pem"] = mc.PEM
	apierr.WriteJSON(w, http.StatusCreated, out)
}
