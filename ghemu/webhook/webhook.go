// Package webhook sends the App's webhooks as GitHub's hookshot does: each event is
// recorded as a delivery in the world when it happens (Emit, inside the transaction
// that made it happen, so deliveries keep the order of events) and sent by one
// goroutine, one at a time, in that order, with GitHub's headers and signatures. Every
// attempt's outcome is recorded, so failed deliveries can be listed and redelivered.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
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

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/faults"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

// hookshotAgent is the User-Agent GitHub sends webhooks with.
const hookshotAgent = "GitHub-Hookshot/bumper-emulator"

// Sender queues and delivers webhooks. Its lock guards the queue, the drops and its
// own flags, nothing of the world; it is taken inside state.Store.Do (by Emit) and
// never held while the state lock is taken (see state's doc).
type Sender struct {
	store  *state.Store
	check  func(event string, body []byte)
	log    zerolog.Logger
	client *http.Client
	faults *faults.Faults

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []int64
	busy   bool
	closed bool
	// drops counts, by event, the next deliveries to fail without reaching the webhook
	// URL (Drop).
	drops map[string]int
	done  chan struct{}
}

// NewSender starts the goroutine that delivers what Emit queues; Close stops it. check,
// when not nil, sees every webhook body before it is sent (the fidelity checker
// validates them against GitHub's webhook schema). f, when not nil, drops some
// deliveries and sends some twice (package faults).
func NewSender(store *state.Store, check func(event string, body []byte), f *faults.Faults, log zerolog.Logger) *Sender {
	s := &Sender{store: store, check: check, faults: f, log: log, client: &http.Client{Timeout: 10 * time.Second},
		drops: map[string]int{}, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.loop()
	return s
}

// Emit records a webhook for the App and queues its delivery; w is the world of the
// caller's transaction. The payload gets GitHub's envelope: action, repository,
// organization, sender, installation. GitHub sends an App only the events of
// repositories it is installed on, and of the events it subscribed to.
func (s *Sender) Emit(w *state.World, event, action string, rp *state.Repo, sender string, body render.Obj) {
	var instID, repoID int64
	if rp != nil {
		in := w.InstallationFor(rp)
		if in == nil {
			return
		}
		instID, repoID = in.ID, rp.ID
	}
	if !subscribed(w.App(), event) {
		return
	}
	rn := render.New(w, nil)
	payload := render.Obj{}
	for k, v := range body {
		payload[k] = v
	}
	if action != "" {
		payload["action"] = action
	}
	if rp != nil {
		payload["repository"] = rn.Repo(rp)
		if org := rn.OrgOf(rp); org != nil {
			payload["organization"] = org
		}
	}
	if _, ok := payload["installation"]; !ok && instID != 0 {
		payload["installation"] = render.Obj{"id": instID, "node_id": render.NodeID("MDIz", instID)}
	}
	if sender != "" {
		payload["sender"] = rn.User(sender)
	}
	raw, err := json.Marshal(Shape(payload))
	if err != nil {
		s.log.Error().Err(err).Str("event", event).Msg("failed to encode webhook payload")
		return
	}
	d := &state.Delivery{ID: w.NextID(), GUID: state.NewGUID(), Event: event, Action: action,
		Installation: instID, RepoID: repoID, Payload: raw, Status: "pending"}
	w.AddDelivery(d)
	s.enqueue(d.ID)
}

// Redeliver queues a new attempt of a delivery, as "Redeliver" in GitHub's UI does;
// w is the world of the caller's transaction.
func (s *Sender) Redeliver(w *state.World, d *state.Delivery) {
	nd := *d
	nd.ID = w.NextID()
	nd.Redelivery = true
	nd.Status, nd.StatusCode, nd.Response = "pending", 0, ""
	w.AddDelivery(&nd)
	s.enqueue(nd.ID)
}

func subscribed(app state.App, event string) bool {
	switch event {
	case "installation", "installation_repositories", "ping":
		return true
	}
	return slices.Contains(app.Events, event)
}

// webhookOnly lists REST fields that webhook payloads do not carry: GitHub's webhook
// schema closes its objects (additionalProperties: false) where the REST description
// leaves them open, so the same object renders slightly differently in the two.
var webhookOnly = map[string]bool{"user_view_type": true, "network_count": true,
	"subscribers_count": true, "client_id": true, "closed_by": true, "installations_count": true}

// Shape removes REST-only fields from a payload, at every depth.
func Shape(v any) any {
	switch t := v.(type) {
	case render.Obj:
		out := make(render.Obj, len(t))
		for k, val := range t {
			if webhookOnly[k] {
				continue
			}
			out[k] = Shape(val)
		}
		return out
	case []render.Obj:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = Shape(val)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = Shape(val)
		}
		return out
	}
	return v
}

func (s *Sender) enqueue(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.queue = append(s.queue, id)
	s.cond.Broadcast()
}

func (s *Sender) loop() {
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
		if dup := s.deliver(id, true); dup != 0 {
			// A duplicate follows its original at once, with the same GUID.
			s.deliver(dup, false)
		}
	}
}

// Idle waits until every queued delivery was attempted, or ctx ends.
func (s *Sender) Idle(ctx context.Context) error {
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

// Close attempts what is queued and stops the sender.
func (s *Sender) Close() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
}

// Drop makes the next n deliveries of event (redeliveries included) fail without
// reaching the webhook URL, as a broken connection does.
func (s *Sender) Drop(event string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops[event] += n
}

// dropped reports whether this delivery of event is one Drop asked to lose, and counts
// it.
func (s *Sender) dropped(event string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drops[event] == 0 {
		return false
	}
	s.drops[event]--
	return true
}

// deliver sends one delivery and records the outcome. It holds the state lock only to
// read the delivery and to record the result, never during the HTTP call. With
// withFaults, the plan of faults may drop the delivery, or ask for it twice: deliver
// then records a second delivery of the same GUID and returns its ID, for the caller
// to send.
func (s *Sender) deliver(id int64, withFaults bool) (duplicate int64) {
	var d *state.Delivery
	var target, secret string
	var appID int64
	var payload []byte
	var guid, event, action string
	var redelivery bool
	s.store.Do(func(w *state.World) {
		if d = w.Delivery(id); d == nil {
			return
		}
		app := w.App()
		target, secret, appID = app.WebhookURL, app.WebhookSecret, app.ID
		payload, guid, event, action, redelivery = d.Payload, d.GUID, d.Event, d.Action, d.Redelivery
	})
	if d == nil {
		return 0
	}
	drop := s.dropped(event)
	fault := faults.Kind("")
	if withFaults && !drop {
		fault = s.faults.Delivery(event, action, redelivery)
	}
	if s.check != nil {
		s.check(event, payload)
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
	case fault == faults.Drop:
		status = "failed to connect to host: dropped by the emulator (faults)"
	case target == "":
		status = "no webhook URL is configured"
	default:
		code, status, respBody = s.post(target, headers, payload)
	}
	s.store.Do(func(w *state.World) {
		d.Headers = headers
		d.StatusCode = code
		d.Status = status
		d.Response = respBody
		d.DeliveredAt = w.Timestamp()
		d.Duration = time.Since(start).Seconds()
		w.MarkChanged()
		if fault == faults.Duplicate {
			nd := *d
			nd.ID = w.NextID()
			nd.Status, nd.StatusCode, nd.Response = "pending", 0, ""
			w.AddDelivery(&nd)
			duplicate = nd.ID
		}
	})
	return duplicate
}

func (s *Sender) post(target string, headers map[string]string, payload []byte) (int, string, string) {
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
