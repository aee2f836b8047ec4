package rest

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// need is what a route requires of the caller.
type need struct {
	// auth selects who may call at all.
	auth authKind
	// perm is the App permission an installation token must hold ("issues", "contents",
	// ...) and level the minimum ("read" or "write"). Empty perm: metadata only.
	perm  string
	level string
	// userLevel is the minimum repository role a user's personal token needs. GitHub lets
	// readers open issues and comment, so this differs from level for some routes.
	userLevel string
	// appOnly refuses people whatever their role: only an App (an installation token,
	// or another App's bot user) may call, as GitHub's checks API answers a personal
	// token with 403 "You must authenticate via a GitHub App.".
	appOnly bool
}

type authKind int

const (
	authRepo    authKind = iota // installation token or user token, on a repository
	authApp                     // App JWT only
	authInstall                 // installation token only
	authAny                     // any valid credential, no repository
	authNone                    // no credential needed
)

// principal is who made a request.
type principal struct {
	app   bool         // authenticated with the App's JWT
	token *state.Token // installation token
	user  *state.User  // the person, or the App's bot for installation tokens
}

// actor is the login that GitHub would show as having acted (webhook sender, comment
// author).
func (p *principal) actor() string {
	if p == nil || p.user == nil {
		return ""
	}
	return p.user.Login
}

const (
	tokenTTL  = time.Hour
	jwtMaxTTL = 10 * time.Minute
)

// authenticate resolves the Authorization header. A missing header gives a nil principal
// and no error: routes decide whether anonymous access is enough.
func authenticate(st *state.World, r *http.Request) (*principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok {
		return nil, apierr.BadCredentials()
	}
	cred = strings.TrimSpace(cred)
	switch strings.ToLower(scheme) {
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return nil, apierr.BadCredentials()
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, apierr.BadCredentials()
		}
		return principalForToken(st, pass)
	case "bearer", "token":
		if strings.Count(cred, ".") == 2 {
			return principalForJWT(st, cred)
		}
		return principalForToken(st, cred)
	default:
		return nil, apierr.BadCredentials()
	}
}

func principalForJWT(st *state.World, raw string) (*principal, error) {
	claims := jwt.RegisteredClaims{}
	tok, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		return &st.AppKey().PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(st.Now), jwt.WithIssuedAt(),
		jwt.WithLeeway(30*time.Second), jwt.WithExpirationRequired())
	if err != nil || !tok.Valid {
		return nil, apierr.New(http.StatusUnauthorized, "A JSON web token could not be decoded")
	}
	app := st.App()
	if claims.Issuer != strconv.FormatInt(app.ID, 10) && claims.Issuer != app.ClientID {
		return nil, apierr.New(http.StatusUnauthorized, "'Issuer' claim ('iss') must be an Integer")
	}
	if claims.IssuedAt != nil && claims.ExpiresAt.Sub(claims.IssuedAt.Time) > jwtMaxTTL+time.Minute {
		return nil, apierr.New(http.StatusUnauthorized,
			"'Expiration time' claim ('exp') is too far in the future")
	}
	return &principal{app: true}, nil
}

func principalForToken(st *state.World, value string) (*principal, error) {
	if t := st.Token(value); t != nil {
		if t.Revoked || !st.Now().Before(t.ExpiresAt) {
			return nil, apierr.BadCredentials()
		}
		return &principal{token: t, user: st.User(st.App().Slug + "[bot]")}, nil
	}
	for _, u := range st.Users() {
		if u.Token != "" && u.Token == value {
			return &principal{user: u}, nil
		}
	}
	return nil, apierr.BadCredentials()
}

// authorize checks the principal against a route's need for the repository (nil for
// routes without one). It returns GitHub's status: 401 without credentials, 404 when the
// caller may not see the repository, 403 when it may see but not do.
func authorize(st *state.World, p *principal, n need, rp *state.Repo) error {
	switch n.auth {
	case authNone:
		return nil
	case authApp:
		if p == nil {
			return apierr.RequiresAuth()
		}
		if !p.app {
			return apierr.New(http.StatusUnauthorized,
				"A JSON web token could not be decoded")
		}
		return nil
	}
	if p == nil {
		if n.auth == authRepo && rp != nil && !rp.Private && state.LevelAtLeast("read", n.level) &&
			state.LevelAtLeast("read", n.userLevel) {
			return nil
		}
		return apierr.RequiresAuth()
	}
	if p.app {
		return apierr.New(http.StatusUnauthorized,
			"A JSON web token can only be used to authenticate as the App: get an installation token first")
	}
	if n.auth == authInstall && p.token == nil {
		return apierr.New(http.StatusForbidden, "This endpoint requires an installation access token")
	}
	if n.auth == authAny || rp == nil {
		return nil
	}
	if p.token != nil {
		if !st.TokenCovers(p.token, rp) {
			return apierr.NotFound()
		}
		if n.perm == "" {
			return nil
		}
		if !state.LevelAtLeast(p.token.Permissions[n.perm], n.level) {
			return apierr.NotAccessible()
		}
		return nil
	}
	role := rp.Role(p.user)
	if role == "" {
		if rp.Private {
			return apierr.NotFound()
		}
		role = "read"
	}
	if n.appOnly && (p.user == nil || p.user.Type != "Bot") {
		return apierr.NotAnApp()
	}
	want := n.userLevel
	if want == "" {
		want = n.level
	}
	if !state.RoleAtLeast(role, want) {
		// GitHub hides admin-only resources (branch protection) from non-admins.
		if !state.RoleAtLeast(role, "read") || want == "admin" {
			return apierr.NotFound()
		}
		return apierr.New(http.StatusForbidden, "Must have "+want+" access to this repository.")
	}
	return nil
}

// rolePermissions is the "permissions" block GitHub renders for a role.
func rolePermissions(role string) obj {
	return obj{"admin": state.RoleAtLeast(role, "admin"), "maintain": state.RoleAtLeast(role, "maintain"),
		"push": state.RoleAtLeast(role, "write"), "triage": state.RoleAtLeast(role, "triage"), "pull": state.RoleAtLeast(role, "read")}
}

// legacyPermission maps a role to the coarse permission GitHub's
// collaborator-permission API reports (admin, write, read, none).
func legacyPermission(role string) string {
	switch role {
	case "admin":
		return "admin"
	case "maintain", "write":
		return "write"
	case "triage", "read":
		return "read"
	}
	return "none"
}

// appSlugOf is the slug of the App a caller acts as: the emulator's App for an
// installation token, another App for its bot user's token; "" for people.
func appSlugOf(st *state.World, who *principal) string {
	switch {
	case who == nil:
		return ""
	case who.token != nil:
		return st.App().Slug
	case who.user != nil && who.user.Type == "Bot":
		return strings.TrimSuffix(who.user.Login, "[bot]")
	}
	return ""
}

// appOf is the App a caller creates check runs as, by ID and slug: the emulator's App
// for an installation token, another App for its bot user's token; 0 and "" for
// people (who may not create check runs: routes' appOnly).
func appOf(st *state.World, who *principal) (int64, string) {
	switch slug := appSlugOf(st, who); {
	case slug == "":
		return 0, ""
	case who.token != nil:
		return st.App().ID, st.App().Slug
	default:
		return who.user.ID, slug
	}
}

// isAdmin reports whether who acts with an admin's own credential on rp (never an
// installation token).
func isAdmin(who *principal, rp *state.Repo) bool {
	return who != nil && who.token == nil && state.RoleAtLeast(rp.Role(who.user), "admin")
}
