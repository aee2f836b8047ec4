package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

var steerAt = time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

func wsteer(id int64) wire.Steer {
	return wire.Steer{ID: id, Author: "maintainer", CreatedAt: steerAt, Text: fmt.Sprintf("steer %d", id)}
}

// TestSteerHub plays serve's should-stop answers and the agent's rounds against the
// hub: each steer reaches the agent once, by the round's harness, however often serve
// lists it; one the harness gives back waits for the next round; what is left when the
// rounds are over is reported not delivered, for serve to keep.
func TestSteerHub(t *testing.T) {
	type step struct {
		do string // "offer IDs", "task IDs", "round HARNESS", "deliver ID", "refuse ID", "end", "close"
		// want, after the step: the round's channel's steers ("ch: 1 2"), or the
		// evidence after close ("1: message; 2: not delivered: …").
		want string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a steer during a round goes to it; serve listing it again gives nothing more", []step{
			{"round claude-code", "ch:"}, {"offer 1", "ch: 1"}, {"deliver 1", ""}, {"offer 1", "ch:"}, {"end", ""},
			{"round claude-code", "ch:"}, {"offer 1", "ch:"}, {"end", ""},
			{"close", "1: message"},
		}},
		{"steers between rounds wait for the next, oldest first", []step{
			{"offer 2 3", ""}, {"round command", "ch: 2 3"}, {"deliver 2", ""}, {"deliver 3", ""}, {"end", ""},
			{"close", "2: file; 3: file"},
		}},
		{"a steer codex gives back is in the next round's prompt", []step{
			{"round codex", "ch:"}, {"offer 4", "ch: 4"}, {"refuse 4", ""}, {"end", ""},
			{"round codex", "ch: 4"}, {"deliver 4", ""}, {"end", ""}, {"close", "4: prompt"},
		}},
		{"a steer a round never took waits for the next", []step{
			{"round claude-code", "ch:"}, {"offer 5", "ch: 5"}, {"end", ""}, {"round claude-code", "ch: 5"}, {"end", ""},
			{"close", "5: not delivered: " + noteRoundsOver},
		}},
		{"a steer given back after the last round keeps the harness's note", []step{
			{"round claude-code", "ch:"}, {"offer 6", "ch: 6"}, {"refuse 6", ""}, {"end", ""},
			{"close", "6: not delivered: refused"},
		}},
		{"the task's steers are delivered with it and never again", []step{
			{"task 7", ""}, {"offer 7 8", ""}, {"round command", "ch: 8"}, {"deliver 7", ""}, {"end", ""},
			{"close", "7: task; 8: not delivered: " + noteRoundsOver},
		}},
		{"a delivery of a steer never given, or given twice, changes nothing", []step{
			{"round command", "ch:"}, {"deliver 99", ""}, {"offer 9", "ch: 9"}, {"deliver 9", ""}, {"refuse 9", ""}, {"end", ""},
			{"round command", "ch:"}, {"end", ""}, {"close", "9: file"},
		}},
		{"a steer without an ID is not taken", []step{
			{"offer 0", ""}, {"round command", "ch:"}, {"end", ""}, {"close", ""},
		}},
		{"after close nothing is taken", []step{
			{"close", ""}, {"offer 10", ""}, {"close", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newSteerHub(func() time.Time { return steerAt.Add(time.Minute) })
			var ch <-chan wire.Steer
			for _, st := range tt.steps {
				verb, args, _ := strings.Cut(st.do, " ")
				var ids []int64
				for _, a := range strings.Fields(args) {
					var id int64
					fmt.Sscan(a, &id)
					ids = append(ids, id)
				}
				var steers []wire.Steer
				for _, id := range ids {
					steers = append(steers, wsteer(id))
				}
				got := ""
				switch verb {
				case "offer":
					h.offer(steers)
				case "task":
					h.fromTask(steers)
				case "round":
					ch = h.startRound(args)
				case "deliver":
					takeSteer(h, ids[0])
					h.report(wire.SteerDelivery{ID: ids[0], DeliveredAt: steerAt.Add(2 * time.Minute)})
				case "refuse":
					takeSteer(h, ids[0])
					h.report(wire.SteerDelivery{ID: ids[0], Note: "refused"})
				case "end":
					h.endRound()
					ch = nil
				case "close":
					var parts []string
					for _, s := range h.close() {
						if s.Via != "" {
							parts = append(parts, fmt.Sprintf("%d: %s", s.ID, s.Via))
						} else {
							parts = append(parts, fmt.Sprintf("%d: not delivered: %s", s.ID, s.Note))
						}
					}
					got = strings.Join(parts, "; ")
				}
				if strings.HasPrefix(st.want, "ch:") {
					// Looked at, not taken: what the harness has not taken yet stays.
					var in []string
					var back []wire.Steer
					for len(ch) > 0 {
						s := <-ch
						in = append(in, fmt.Sprint(s.ID))
						back = append(back, s)
					}
					for _, s := range back {
						h.round.ch <- s
					}
					got = strings.TrimSpace("ch: " + strings.Join(in, " "))
				}
				if got != st.want {
					t.Fatalf("after %q: %q, want %q", st.do, got, st.want)
				}
			}
			// What serve hears is what the evidence says.
			for _, d := range h.deliveries() {
				rec := h.byID[d.ID]
				if !d.DeliveredAt.Equal(rec.DeliveredAt) || d.Note != rec.Note {
					t.Fatalf("serve hears %+v, the evidence says %+v", d, rec)
				}
			}
		})
	}
}

// takeSteer takes steer id from the running round's channel, as its harness would.
func takeSteer(h *steerHub, id int64) {
	if h.round == nil {
		return
	}
	var back []wire.Steer
	for len(h.round.ch) > 0 {
		if s := <-h.round.ch; s.ID != id {
			back = append(back, s)
		}
	}
	for _, s := range back {
		h.round.ch <- s
	}
}

// TestSteerHubBounded: serve listing more steers than a run takes gets the first
// evidence.MaxSteers taken; the rest are never reported, so serve keeps them.
func TestSteerHubBounded(t *testing.T) {
	h := newSteerHub(time.Now)
	var many []wire.Steer
	for i := range evidence.MaxSteers + 20 {
		many = append(many, wsteer(int64(i+1)))
	}
	h.offer(many)
	ch := h.startRound(repoconfig.HarnessCommand)
	if len(ch) != evidence.MaxSteers {
		t.Fatalf("%d steers for the round", len(ch))
	}
	h.endRound()
	if got := len(h.close()); got != evidence.MaxSteers || len(h.deliveries()) != evidence.MaxSteers {
		t.Fatalf("%d steers in the evidence", got)
	}
}

// TestPollStopSteers: the stop poller hands the steers of serve's answers to the hub,
// each once however often serve lists it, and the round's harness gets it.
func TestPollStopSteers(t *testing.T) {
	var mu sync.Mutex
	polls := make(chan int, 100)
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathShouldStop {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		n++
		polls <- n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(wire.ShouldStop{Steers: []wire.Steer{wsteer(11), wsteer(12)}})
	}))
	defer srv.Close()
	client, err := appclient.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	l := newLink(client.WithRunToken("rt"), time.Now().Add(time.Hour), time.Now)
	steers := l.steers.startRound(repoconfig.HarnessCommand)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.pollStop(ctx, time.Millisecond, cancel)
	}()
	for <-polls < 3 {
	}
	// The third answer was asked for after the first was handed on.
	cancel(nil)
	<-done
	var got []int64
	for len(steers) > 0 {
		got = append(got, (<-steers).ID)
	}
	if fmt.Sprint(got) != "[11 12]" || !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Fatalf("the round got %v (cause %v)", got, context.Cause(ctx))
	}
	l.steers.report(wire.SteerDelivery{ID: 11, DeliveredAt: time.Now()})
	l.steers.report(wire.SteerDelivery{ID: 12, Note: harness.NoteFinished})
	l.steers.endRound()
	ev := l.steers.close()
	if len(ev) != 2 || ev[0].Via != evidence.SteerViaFile || ev[1].Via != "" || ev[1].Note != harness.NoteFinished || ev[0].Author != "maintainer" || ev[0].Text != "steer 11" {
		t.Fatalf("evidence %+v", ev)
	}
}
