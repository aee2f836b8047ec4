package runner

import (
	"bytes"
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
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/slots"
)

// syncBuffer is a job log the test reads while the run writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitServe is serve as the waiting call-back sees it: the notes it heard, in order.
type waitServe struct {
	mu    sync.Mutex
	notes []bool
}

func (s *waitServe) heard() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.notes...)
}

// until polls cond with a generous deadline: the machine is shared.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("still not: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWaitForSlot: a run whose host runs as many VMs as it allows waits, saying so in
// the job log and to serve; it starts once the slot frees, saying after how long, and
// tells serve it no longer waits. A /stop while it waits ends the run stopped, leaving
// no claim behind.
func TestWaitForSlot(t *testing.T) {
	serve := &waitServe{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathWaiting || r.Header.Get("Authorization") != "Bearer rt" {
			http.NotFound(w, r)
			return
		}
		var body wire.Waiting
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		serve.mu.Lock()
		serve.notes = append(serve.notes, body.Waiting)
		serve.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	client, err := appclient.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, err := slots.New(slots.Limits{MaxVMs: 1, MemoryMB: 4096, Dir: t.TempDir()}, slots.WithPoll(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	job := &syncBuffer{}
	r := testRun(Config{Slots: host, Log: job, VM: sandbox.Config{MemoryMB: 512}}, nil)
	r.link = newLink(client.WithRunToken("rt"), time.Now().Add(time.Hour), time.Now)

	other, err := host.Acquire(context.Background(), 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		slot *slots.Slot
		err  error
	}
	got := make(chan result, 1)
	go func() {
		s, err := r.waitForSlot(context.Background())
		got <- result{s, err}
	}()
	until(t, "serve heard the run waits", func() bool { return len(serve.heard()) > 0 })
	line := "waiting for a VM slot: 1 of 1 VMs (1024 of 4096 MiB) in use on this runner host; this run's VM needs 512 MiB, next in line"
	until(t, "the job log says the run waits", func() bool { return strings.Contains(job.String(), line) })
	if err := other.Release(); err != nil {
		t.Fatal(err)
	}
	res := <-got
	if res.err != nil || res.slot == nil {
		t.Fatalf("waitForSlot = %v, %v", res.slot, res.err)
	}
	if !strings.Contains(job.String(), "VM slot acquired after ") {
		t.Fatalf("the job log does not say the run got its slot:\n%s", job.String())
	}
	if fmt.Sprint(serve.heard()) != "[true false]" {
		t.Fatalf("serve heard %v; want the wait, then its end", serve.heard())
	}
	if strings.Count(job.String(), "waiting for a VM slot") != 1 {
		t.Fatalf("the job log repeats the wait within %v:\n%s", slotNoteEvery, job.String())
	}

	// The run holds the slot: a second run waits, and is stopped.
	job2 := &syncBuffer{}
	r2 := testRun(Config{Slots: host, Log: job2}, nil)
	r2.link = r.link
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		s, err := r2.waitForSlot(ctx)
		got <- result{s, err}
	}()
	until(t, "the second run waits", func() bool { return strings.Contains(job2.String(), "waiting for a VM slot") })
	cancel(fmt.Errorf("%w: the work item is stopped", errStopped))
	res2 := <-got
	if out, _ := classify(res2.err); res2.slot != nil || out != evidence.OutcomeStopped {
		t.Fatalf("a stopped wait = %v, %v (%s)", res2.slot, res2.err, out)
	}
	if u, err := host.Usage(); err != nil || u != (slots.Usage{VMs: 1, MemoryMB: 512}) {
		t.Fatalf("usage after the stop = %+v, %v; want the first run alone", u, err)
	}
	_ = res.slot.Release()

	// A VM larger than the host allows fails at once, naming the variable.
	r3 := testRun(Config{Slots: host, VM: sandbox.Config{MemoryMB: 8192}}, nil)
	r3.link = r.link
	if _, err := r3.waitForSlot(context.Background()); err == nil || !strings.Contains(err.Error(), slots.EnvMemoryMB) {
		t.Fatalf("a VM too large for the host: %v", err)
	}
	if _, err := testRun(Config{}, nil).waitForSlot(context.Background()); err != nil {
		t.Fatalf("no limit: %v", err)
	}
	if !errors.Is(res2.err, errStopped) {
		t.Fatalf("the stop's cause is lost: %v", res2.err)
	}
}
