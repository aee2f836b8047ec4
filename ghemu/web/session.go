package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// The web view's forms act as one of the emulator's local users (the seed's people,
// who hold personal tokens), in a browser on the machine the emulator runs on. A
// person signs in with a login and that user's token (what `bumper emulator` and
// `bumper demo --keep` print), which starts a session: a random ID in an HttpOnly,
// SameSite=Strict cookie, and a random CSRF token every form carries. A form post is
// taken only from loopback, addressed to a loopback host, from a page of the emulator
// itself (its Origin, or else its Referer), with the session's token.

// sessionCookie names the session's cookie.
const sessionCookie = "ghemu_session"

// maxSessions bounds the sessions kept; the oldest go first. Sessions live in memory
// only: a restarted emulator asks everyone to sign in again.
const maxSessions = 1024

// sessionTTL is how long a session lasts.
const sessionTTL = 12 * time.Hour

// session is one browser's: signed in as login, or about to sign in (login "").
type session struct {
	id, csrf, login string
	expires         time.Time
}

// sessions are the browsers' sessions. Its lock is a leaf: it is never held while the
// state lock is taken, nor taken by anything the state lock's holder calls.
type sessions struct {
	mu    sync.Mutex
	m     map[string]*session
	order []string // oldest first
}

func newSessions() *sessions { return &sessions{m: map[string]*session{}} }

// randomToken is 32 random bytes, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start begins a new session for login ("" before signing in), forgetting the oldest
// beyond maxSessions.
func (s *sessions) start(login string) session {
	ss := &session{id: randomToken(), csrf: randomToken(), login: login, expires: time.Now().Add(sessionTTL)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[ss.id] = ss
	s.order = append(s.order, ss.id)
	for len(s.order) > maxSessions {
		delete(s.m, s.order[0])
		s.order = s.order[1:]
	}
	return *ss
}

// get is the live session with id, or false.
func (s *sessions) get(id string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[id]
	if ss == nil {
		return session{}, false
	}
	if time.Now().After(ss.expires) {
		delete(s.m, id)
		return session{}, false
	}
	return *ss, true
}

// end forgets a session.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// sessionOf is the request's session, if its cookie names a live one.
func (v *View) sessionOf(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return session{}, false
	}
	return v.sessions.get(c.Value)
}

// setSessionCookie hands the browser its session: HttpOnly (no script reads it; the
// pages run none anyway), SameSite=Strict (no other site's page sends it). Secure is
// left off: the emulator speaks plain HTTP on loopback.
func setSessionCookie(w http.ResponseWriter, ss session) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: ss.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Expires: ss.expires})
}

// clearSessionCookie removes it.
func clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// csrfMatches compares a form's token with the session's in constant time.
func csrfMatches(ss session, token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(ss.csrf), []byte(token)) == 1
}

// errNotLocal is a form post from outside the machine or another site.
var errNotLocal = errors.New("not local")

// checkLocal refuses a form post that is not a local user's, on this machine, from a
// page of the emulator: from a loopback address, addressed to a loopback host (a name
// that resolves elsewhere, as a DNS rebinding attack sends, is refused), with an Origin
// (or, without one, a Referer) naming this very host, and, when the browser says where
// it comes from (Sec-Fetch-Site), from the same origin. It returns why, in words the
// refusal page shows.
func checkLocal(r *http.Request) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return "The web view's forms answer only on loopback: this request came from " + r.RemoteAddr + ".", errNotLocal
	}
	if !loopbackHost(r.Host) {
		return "The web view's forms answer only requests addressed to a loopback host (127.0.0.1, ::1 or localhost), not " + r.Host + ".", errNotLocal
	}
	from := r.Header.Get("Origin")
	if from == "" {
		if ref, err := url.Parse(r.Header.Get("Referer")); err == nil && ref.Host != "" {
			from = ref.Scheme + "://" + ref.Host
		}
	}
	if o, err := url.Parse(from); from == "" || err != nil || o.Host != r.Host || (o.Scheme != "http" && o.Scheme != "https") {
		return "The form was not sent from a page of this emulator (origin " + quoteOrNone(from) + "): forms from other sites are refused.", errNotLocal
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "The form was sent from another site (" + site + "): forms from other sites are refused.", errNotLocal
	}
	return "", nil
}

// loopbackHost reports whether a Host header names this machine: a loopback IP or
// localhost, with or without a port.
func loopbackHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return `"` + s + `"`
}

// tokensMatch compares a token typed in with a user's in constant time.
func tokensMatch(want, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// loginView is the sign-in page's.
type loginView struct {
	Users  []string
	Return string
	// Token is the sign-in form's CSRF token (the session not yet signed in holds it).
	Token string
}

// login is GET /login: the sign-in form, listing the local users (the seed's people
// with personal tokens). A browser without a session gets one here, not yet signed
// in, whose CSRF token the form carries.
func (v *View) login(w http.ResponseWriter, r *http.Request) {
	ss, ok := v.sessionOf(r)
	if !ok {
		ss = v.sessions.start("")
		setSessionCookie(w, ss)
	}
	lv := loginView{Return: localPath(r.URL.Query().Get("return")), Token: ss.csrf}
	v.store.Do(func(st *state.World) {
		for _, u := range st.Users() {
			if u.Type == "User" && u.Token != "" {
				lv.Users = append(lv.Users, u.Login)
			}
		}
	})
	v.writePage(w, r, http.StatusOK, "login", page{Title: "Sign in · GitHub emulator", Data: lv})
}
