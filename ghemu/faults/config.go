// Package faults makes the emulator misbehave as GitHub does now and then: REST answers
// of 502 and 503, secondary rate limits (403, and 429, with Retry-After), 422 races where
// GitHub answers one, added latency, and webhook deliveries dropped or sent twice. A
// Config (a YAML file, bumper emulator --faults FILE) lists the rules; Faults decides,
// request by request, from a seeded random source per rule, so the same seed and the
// same sequence of requests give the same faults.
//
// A fault is decided before the request is handled: a faulted request changes nothing
// in the world. Faults also remembers every Retry-After it sent, per credential, and
// counts the requests that came back before it ran out (EarlyRetries).
//
// Faults has one lock, a leaf: it guards the random sources, the counts and the
// Retry-After memory, and is never held while another lock is taken.
package faults

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is a fault plan: the YAML of bumper emulator --faults FILE.
type Config struct {
	// Seed makes a run replayable: the same seed and the same sequence of requests and
	// deliveries give the same faults. Nil: a random seed, which Faults.Seed tells.
	Seed *uint64 `yaml:"seed"`
	// REST are the rules for the REST API; a request takes the first rule that matches
	// it, and no fault if none does.
	REST []RESTRule `yaml:"rest"`
	// Webhooks are the rules for webhook deliveries; first match wins, as for REST.
	Webhooks []WebhookRule `yaml:"webhooks"`
}

// RESTRule is what may go wrong with the requests one route pattern and its methods
// match. The rates are probabilities between 0 and 1 of each kind of answer; their sum
// is at most 1, and what is left is the chance the request is served as usual.
type RESTRule struct {
	// Route is a GitHub path template, exactly as GitHub's description writes it
	// ("/repos/{owner}/{repo}/issues/{issue_number}/comments"), or a glob over the
	// request's path: "*" is one segment (or part of one: "issue*"), "**" any number
	// of segments ("/repos/acme/**").
	Route string `yaml:"route"`
	// Methods are the HTTP methods the rule covers; empty: all.
	Methods []string `yaml:"methods"`

	// BadGateway is the rate of 502 {"message":"Server Error"}.
	BadGateway float64 `yaml:"bad_gateway"`
	// Unavailable is the rate of 503 "No server is currently available…".
	Unavailable float64 `yaml:"unavailable"`
	// SecondaryRateLimit is the rate of 403 "You have exceeded a secondary rate limit"
	// with retry-after.
	SecondaryRateLimit float64 `yaml:"secondary_rate_limit"`
	// TooManyRequests is the rate of 429 with the same body and Retry-After.
	TooManyRequests float64 `yaml:"too_many_requests"`
	// Race is the rate of the 422 a concurrent writer causes, on the routes where GitHub
	// answers one (Races): "Reference already exists" on creating a ref, "Update is not
	// a fast forward" on moving one, and so on. Other routes the rule matches get none.
	Race float64 `yaml:"race"`
	// RetryAfter is the Retry-After of the rule's 403 and 429, in seconds; 0: 60.
	RetryAfter int `yaml:"retry_after"`
	// Latency is added before every request the rule matches, faulted or not: a
	// duration ("200ms") or a range drawn uniformly ("50ms-2s").
	Latency Latency `yaml:"latency"`

	line int
}

// WebhookRule is what may go wrong with the deliveries of some events.
type WebhookRule struct {
	// Events are the events the rule covers, "issue_comment" or with an action,
	// "issue_comment.created"; empty: all.
	Events []string `yaml:"events"`
	// Drop is the rate of deliveries lost on the way: recorded as failed (a broken
	// connection, status code 0) in the App's delivery log, ready to be redelivered.
	Drop float64 `yaml:"drop"`
	// Duplicate is the rate of deliveries sent twice, with the same X-GitHub-Delivery.
	Duplicate float64 `yaml:"duplicate"`
	// Redeliveries makes the rule cover redeliveries too; by default they are spared,
	// so a dropped delivery can be redelivered.
	Redeliveries bool `yaml:"redeliveries"`

	line int
}

// Latency is a fixed delay (Min == Max) or a range to draw from.
type Latency struct {
	Min, Max time.Duration
}

// UnmarshalYAML reads "200ms" or "50ms-2s".
func (l *Latency) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: latency must be a duration (\"200ms\") or a range (\"50ms-2s\")", n.Line)
	}
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	minD, err := time.ParseDuration(strings.TrimSpace(lo))
	if err != nil {
		return fmt.Errorf("line %d: latency %q: %w", n.Line, s, err)
	}
	maxD := minD
	if isRange {
		if maxD, err = time.ParseDuration(strings.TrimSpace(hi)); err != nil {
			return fmt.Errorf("line %d: latency %q: %w", n.Line, s, err)
		}
	}
	if minD < 0 || maxD < minD {
		return fmt.Errorf("line %d: latency %q: the range must run from a non-negative duration up", n.Line, s)
	}
	l.Min, l.Max = minD, maxD
	return nil
}

// Load reads a fault plan from a YAML file; see Parse.
func Load(path string) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read faults file: %w", err)
	}
	c, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("faults file %s: %w", path, err)
	}
	return c, nil
}

// Parse reads a fault plan strictly: an unknown key, a rate outside 0..1, rates adding
// up to more than 1 or a malformed latency is an error naming its line. Whether routes
// exist is checked by New, which knows them.
func Parse(raw []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 1 {
		lines := func(key string) []int {
			m := doc.Content[0]
			for i := 0; i+1 < len(m.Content); i += 2 {
				if m.Content[i].Value == key {
					var out []int
					for _, it := range m.Content[i+1].Content {
						out = append(out, it.Line)
					}
					return out
				}
			}
			return nil
		}
		for i, l := range lines("rest") {
			if i < len(c.REST) {
				c.REST[i].line = l
			}
		}
		for i, l := range lines("webhooks") {
			if i < len(c.Webhooks) {
				c.Webhooks[i].line = l
			}
		}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// where names a rule for an error: its line when it came from YAML.
func where(kind string, i, line int) string {
	if line > 0 {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s[%d]", kind, i)
}

// check validates what needs no knowledge of the routes.
func (c *Config) check() error {
	for i := range c.REST {
		r := &c.REST[i]
		at := where("rest", i, r.line)
		if r.Route == "" || !strings.HasPrefix(r.Route, "/") {
			return fmt.Errorf("%s: route must be a path template or glob starting with /", at)
		}
		for _, m := range r.Methods {
			switch strings.ToUpper(m) {
			case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE":
			default:
				return fmt.Errorf("%s: method %q is not one GitHub's REST API uses", at, m)
			}
		}
		if err := checkRates(at, map[string]float64{"bad_gateway": r.BadGateway, "unavailable": r.Unavailable,
			"secondary_rate_limit": r.SecondaryRateLimit, "too_many_requests": r.TooManyRequests, "race": r.Race}); err != nil {
			return err
		}
		if r.RetryAfter < 0 {
			return fmt.Errorf("%s: retry_after must not be negative", at)
		}
	}
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		at := where("webhooks", i, h.line)
		for _, e := range h.Events {
			if e == "" || strings.ContainsAny(e, " /") {
				return fmt.Errorf("%s: event %q is not an event name (\"issue_comment\" or \"issue_comment.created\")", at, e)
			}
		}
		if err := checkRates(at, map[string]float64{"drop": h.Drop, "duplicate": h.Duplicate}); err != nil {
			return err
		}
	}
	return nil
}

func checkRates(at string, rates map[string]float64) error {
	sum := 0.0
	for name, v := range rates {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("%s: %s is a rate, between 0 and 1 (got %v)", at, name, v)
		}
		sum += v
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("%s: the rates add up to %v, more than 1", at, sum)
	}
	return nil
}
