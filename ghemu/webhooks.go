package ghemu

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// hookshotAgent is the User-Agent GitHub sends webhooks with.
const hookshotAgent = "GitHub-Hookshot/bumper-emulator"

// emit records a webhook for the App and queues its delivery. Callers hold e.mu. The
// payload gets GitHub's envelope: action, repository, organization, sender, installation.
func (e *Emulator) emit(event, action string, rp *repo, sender string, body obj) {
	var instID, repoID int64
	if rp != nil {
		in := e.st.installationFor(rp)
		if in == nil {
			// GitHub sends an App only the events of repositories it is installed on.
			return
		}
		instID, repoID = in.ID, rp.ID
	}
	if !e.subscribed(event) {
		return
	}
	payload := obj{}
	for k, v := range body {
		payload[k] = v
	}
	if action != "" {
		payload["action"] = action
	}
	if rp != nil {
		payload["repository"] = e.renderRepo(rp)
		if owner := e.st.Users[key(rp.Owner)]; owner != nil && owner.Type == "Organization" {
			payload["organization"] = e.renderOrg(owner)
		}
	}
	if _, ok := payload["installation"]; !ok && instID != 0 {
		payload["installation"] = obj{"id": instID, "node_id": nodeID("MDIz", instID)}
	}
	if sender != "" {
		payload["sender"] = e.renderUser(sender)
	}
	raw, err := json.Marshal(webhookShape(payload))
	if err != nil {
		e.log.Error().Err(err).Str("event", event).Msg("failed to encode webhook payload")
		return
	}
	d := &delivery{ID: e.st.nextID(), GUID: newGUID(), Event: event, Action: action,
		Installation: instID, RepoID: repoID, Payload: raw, Status: "pending"}
	e.st.Deliveries = append(e.st.Deliveries, d)
	e.pruneDeliveries()
	e.hooks.enqueue(d.ID)
}

// webhookOnly lists REST fields that webhook payloads do not carry: GitHub's webhook
// schema closes its objects (additionalProperties: false) where the REST description
// leaves them open, so the same object renders slightly differently in the two.
var webhookOnly = map[string]bool{"user_view_type": true, "network_count": true,
	"subscribers_count": true, "client_id": true, "closed_by": true, "installations_count": true}

// webhookShape removes REST-only fields from a payload, at every depth.
func webhookShape(v any) any {
	switch t := v.(type) {
	case obj:
		out := make(obj, len(t))
		for k, val := range t {
			if webhookOnly[k] {
				continue
			}
			out[k] = webhookShape(val)
		}
		return out
	case []obj:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = webhookShape(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = webhookShape(val)
		}
		return out
	}
	return v
}

// maxDeliveries bounds the delivery log kept in the state.
const maxDeliveries = 5000

func (e *Emulator) pruneDeliveries() {
	if n := len(e.st.Deliveries); n > maxDeliveries {
		e.st.Deliveries = append([]*delivery(nil), e.st.Deliveries[n-maxDeliveries:]...)
	}
}

func (e *Emulator) subscribed(event string) bool {
	switch event {
	case "installation", "installation_repositories", "ping":
		return true
	}
	return slices.Contains(e.st.App.Events, event)
}

func (e *Emulator) renderOrg(u *user) obj {
	base := e.baseURL + "/orgs/" + u.Login
	return obj{"login": u.Login, "id": u.ID, "node_id": nodeID("O", u.ID), "url": base,
		"repos_url": base + "/repos", "events_url": base + "/events", "hooks_url": base + "/hooks",
		"issues_url": base + "/issues", "members_url": base + "/members{/member}",
		"public_members_url": base + "/public_members{/member}",
		"avatar_url":         e.baseURL + "/avatars/" + u.Login, "description": nil}
}

// webhookSender delivers queued webhooks one at a time, in the order they happened, so
// a test sees "labeled" before the "created" comment that followed it.
type webhookSender struct {
	e      *Emulator
	client *http.Client
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []int64
	busy   bool
	closed bool
	done   chan struct{}
}

func newWebhookSender(e *Emulator) *webhookSender {
	s := &webhookSender{e: e, client: &http.Client{Timeout: 10 * time.Second}, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.loop()
	return s
}

func (s *webhookSender) enqueue(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.queue = append(s.queue, id)
	s.cond.Broadcast()
}

func (s *webhookSender) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.busy = false
			s.cond.Broadcast()
			s.cond.Wait()
		}
		if s.closed && len(s.queue) == 0 {
			s.busy = false
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		id := s.queue[0]
		s.queue = s.queue[1:]
		s.busy = true
		s.mu.Unlock()
		s.deliver(id)
	}
}

// idle waits until every queued delivery was attempted, or ctx ends.
func (s *webhookSender) idle(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 || s.busy {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.cond.Wait()
	}
	return nil
}

func (s *webhookSender) close() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
}

// deliver sends one delivery and records the outcome. It holds e.mu only to read the
// delivery and to record the result, never during the HTTP call.
func (s *webhookSender) deliver(id int64) {
	e := s.e
	e.mu.Lock()
	d := e.findDelivery(id)
	if d == nil {
		e.mu.Unlock()
		return
	}
	target, secret, appID := e.st.App.WebhookURL, e.st.App.WebhookSecret, e.st.App.ID
	payload, guid, event := d.Payload, d.GUID, d.Event
	check := e.webhookCheck
	drop := e.drops[event] > 0
	if drop {
		e.drops[event]--
	}
	e.mu.Unlock()

	if check != nil {
		check(event, payload)
	}
	headers := map[string]string{
		"Accept":                                 "*/*",
		"Content-Type":                           "application/json",
		"User-Agent":                             hookshotAgent,
		"X-GitHub-Delivery":                      guid,
		"X-GitHub-Event":                         event,
		"X-GitHub-Hook-ID":                       strconv.FormatInt(appID, 10),
		"X-GitHub-Hook-Installation-Target-ID":   strconv.FormatInt(appID, 10),
		"X-GitHub-Hook-Installation-Target-Type": "integration",
		"X-Hub-Signature":                        "sha1=" + hexHMAC(sha1.New, secret, payload),
		"X-Hub-Signature-256":                    "sha256=" + hexHMAC(sha256.New, secret, payload),
	}
	start := time.Now()
	code, status, respBody := 0, "", ""
	switch {
	case drop:
		status = "failed to connect to host: dropped by the emulator (DropDeliveries)"
	case target == "":
		status = "no webhook URL is configured"
	default:
		code, status, respBody = s.post(target, headers, payload)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d.Headers = headers
	d.StatusCode = code
	d.Status = status
	d.Response = respBody
	d.DeliveredAt = e.timestamp()
	d.Duration = time.Since(start).Seconds()
	e.saveLocked()
}

func (s *webhookSender) post(target string, headers map[string]string, payload []byte) (int, string, string) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return 0, "invalid webhook URL: " + err.Error(), ""
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "failed to connect to host: " + err.Error(), ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	status := "OK"
	if resp.StatusCode >= 300 {
		status = fmt.Sprintf("Invalid HTTP Response: %d", resp.StatusCode)
	}
	return resp.StatusCode, status, string(body)
}

func hexHMAC(h func() hash.Hash, secret string, payload []byte) string {
	m := hmac.New(h, []byte(secret))
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil))
}

func (e *Emulator) findDelivery(id int64) *delivery {
	for _, d := range e.st.Deliveries {
		if d.ID == id {
			return d
		}
	}
	return nil
}

func (d *delivery) failed() bool { return d.StatusCode < 200 || d.StatusCode >= 300 }

// DropDeliveries makes the next n deliveries of event (redeliveries included) fail
// without reaching the webhook URL, as a broken connection does: each is recorded with
// status code 0, ready to be listed and redelivered.
func (e *Emulator) DropDeliveries(event string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drops[event] += n
}

// WaitWebhooks blocks until every webhook queued so far was attempted.
func (e *Emulator) WaitWebhooks(ctx context.Context) error { return e.hooks.idle(ctx) }

// redeliverLocked queues a new attempt of a delivery, as "Redeliver" in GitHub's UI
// does. Callers hold e.mu.
func (e *Emulator) redeliverLocked(d *delivery) {
	nd := *d
	nd.ID = e.st.nextID()
	nd.Redelivery = true
	nd.Status, nd.StatusCode, nd.Response = "pending", 0, ""
	e.st.Deliveries = append(e.st.Deliveries, &nd)
	e.pruneDeliveries()
	e.hooks.enqueue(nd.ID)
}

// FailedDeliveries lists the IDs of deliveries whose last attempt did not get a 2xx and
// that were not redelivered successfully since.
func (e *Emulator) FailedDeliveries() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ok := map[string]bool{}
	for _, d := range e.st.Deliveries {
		if !d.failed() {
			ok[d.GUID] = true
		}
	}
	var out []int64
	seen := map[string]bool{}
	for _, d := range e.st.Deliveries {
		if d.Status != "pending" && d.failed() && !ok[d.GUID] && !seen[d.GUID] {
			seen[d.GUID] = true
			out = append(out, d.ID)
		}
	}
	return out
}

// newGUID returns a random RFC 4122 version 4 UUID, the shape of X-GitHub-Delivery.
func newGUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
