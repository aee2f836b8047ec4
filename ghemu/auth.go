package ghemu

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
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
	app   bool          // authenticated with the App's JWT
	token *installToken // installation token
	user  *user         // the person, or the App's bot for installation tokens
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
func (e *Emulator) authenticate(r *http.Request) (*principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil
	}
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok {
		return nil, errBadCredentials()
	}
	cred = strings.TrimSpace(cred)
	switch strings.ToLower(scheme) {
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return nil, errBadCredentials()
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, errBadCredentials()
		}
		return e.principalForToken(pass)
	case "bearer", "token":
		if strings.Count(cred, ".") == 2 {
			return e.principalForJWT(cred)
		}
		return e.principalForToken(cred)
	default:
		return nil, errBadCredentials()
	}
}

func (e *Emulator) principalForJWT(raw string) (*principal, error) {
	claims := jwt.RegisteredClaims{}
	tok, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		return &e.appKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(e.now), jwt.WithIssuedAt(),
		jwt.WithLeeway(30*time.Second), jwt.WithExpirationRequired())
	if err != nil || !tok.Valid {
		return nil, newError(http.StatusUnauthorized, "A JSON web token could not be decoded")
	}
	if claims.Issuer != strconv.FormatInt(e.st.App.ID, 10) && claims.Issuer != e.st.App.ClientID {
		return nil, newError(http.StatusUnauthorized, "'Issuer' claim ('iss') must be an Integer")
	}
	if claims.IssuedAt != nil && claims.ExpiresAt.Sub(claims.IssuedAt.Time) > jwtMaxTTL+time.Minute {
		return nil, newError(http.StatusUnauthorized,
			"'Expiration time' claim ('exp') is too far in the future")
	}
	return &principal{app: true}, nil
}

func (e *Emulator) principalForToken(value string) (*principal, error) {
	if t, ok := e.st.Tokens[value]; ok {
		if t.Revoked || !e.now().Before(t.ExpiresAt) {
			return nil, errBadCredentials()
		}
		return &principal{token: t, user: e.st.Users[key(e.st.App.Slug+"[bot]")]}, nil
	}
	for _, u := range e.st.Users {
		if u.Token != "" && u.Token == value {
			return &principal{user: u}, nil
		}
	}
	return nil, errBadCredentials()
}

// authorize checks the principal against a route's need for the repository (nil for
// routes without one). It returns GitHub's status: 401 without credentials, 404 when the
// caller may not see the repository, 403 when it may see but not do.
func (e *Emulator) authorize(p *principal, n need, rp *repo) error {
	switch n.auth {
	case authNone:
		return nil
	case authApp:
		if p == nil {
			return errRequiresAuth()
		}
		if !p.app {
			return newError(http.StatusUnauthorized,
				"A JSON web token could not be decoded")
		}
		return nil
	}
	if p == nil {
		if n.auth == authRepo && rp != nil && !rp.Private && levelAtLeast("read", n.level) &&
			levelAtLeast("read", n.userLevel) {
			return nil
		}
		return errRequiresAuth()
	}
	if p.app {
		return newError(http.StatusUnauthorized,
			"A JSON web token can only be used to authenticate as the App: get an installation token first")
	}
	if n.auth == authInstall && p.token == nil {
		return newError(http.StatusForbidden, "This endpoint requires an installation access token")
	}
	if n.auth == authAny || rp == nil {
		return nil
	}
	if p.token != nil {
		if !e.tokenCovers(p.token, rp) {
			return errNotFound()
		}
		if n.perm == "" {
			return nil
		}
		if !levelAtLeast(p.token.Permissions[n.perm], n.level) {
			return errNotAccessible()
		}
		return nil
	}
	role := e.roleOf(p.user, rp)
	if role == "" {
		if rp.Private {
			return errNotFound()
		}
		role = "read"
	}
	if n.appOnly && (p.user == nil || p.user.Type != "Bot") {
		return errNotAnApp()
	}
	want := n.userLevel
	if want == "" {
		want = n.level
	}
	if !roleAtLeast(role, want) {
		// GitHub hides admin-only resources (branch protection) from non-admins.
		if !roleAtLeast(role, "read") || want == "admin" {
			return errNotFound()
		}
		return newError(http.StatusForbidden, "Must have "+want+" access to this repository.")
	}
	return nil
}

func (e *Emulator) tokenCovers(t *installToken, rp *repo) bool {
	in := e.st.Installations[t.InstallationID]
	if in == nil || e.st.installationFor(rp) != in {
		return false
	}
	return t.RepoIDs == nil || slices.Contains(t.RepoIDs, rp.ID)
}

// roleOf is the user's role on the repository: the owner is admin, collaborators have
// their recorded permission, others none.
func (e *Emulator) roleOf(u *user, rp *repo) string {
	if u == nil {
		return ""
	}
	if strings.EqualFold(u.Login, rp.Owner) {
		return "admin"
	}
	return rp.Collaborators[key(u.Login)]
}

var roleRank = map[string]int{"": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

func roleAtLeast(have, want string) bool {
	if want == "" {
		return true
	}
	return roleRank[have] >= roleRank[want]
}

var levelRank = map[string]int{"": 0, "read": 1, "write": 2, "admin": 3}

func levelAtLeast(have, want string) bool {
	if want == "" {
		return true
	}
	return levelRank[have] >= levelRank[want]
}

// rolePermissions is the "permissions" block GitHub renders for a role.
func rolePermissions(role string) obj {
	return obj{"admin": roleAtLeast(role, "admin"), "maintain": roleAtLeast(role, "maintain"),
		"push": roleAtLeast(role, "write"), "triage": roleAtLeast(role, "triage"), "pull": roleAtLeast(role, "read")}
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

// randomToken returns a GitHub-shaped token: a prefix and 36 base62 characters.
func randomToken(prefix string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 36)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}
