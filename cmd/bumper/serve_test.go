package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/workitem"
)

// recordingPauser records the pause states a reload sets.
type recordingPauser struct {
	mu  sync.Mutex
	got []workitem.PauseState
	set chan struct{}
}

func (p *recordingPauser) SetPause(_ context.Context, s workitem.PauseState) (int, error) {
	p.mu.Lock()
	p.got = append(p.got, s)
	p.mu.Unlock()
	p.set <- struct{}{}
	return 0, nil
}

// TestReloadPauseOnSIGHUP: serve applies the kill switch of its configuration file
// again when it gets SIGHUP, a real signal to this process; a file that no longer
// loads changes nothing.
func TestReloadPauseOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "serve.yml")
	write := func(bumper string) {
		t.Helper()
		body := fmt.Sprintf("github:\n  app:\n    integration_id: 42\n    webhook_secret: s\nbumper:\n  private_key_file: %s\n  run_token_key: %x\n%s",
			keyFile, make([]byte, 32), bumper)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := &recordingPauser{set: make(chan struct{}, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	go reloadPause(ctx, cfg, p, ready)
	<-ready
	hup := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(want workitem.PauseState) {
		t.Helper()
		select {
		case <-p.set:
		case <-time.After(10 * time.Second):
			t.Fatal("SIGHUP set nothing")
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if got := p.got[len(p.got)-1]; got != want {
			t.Fatalf("SIGHUP set %+v, want %+v", got, want)
		}
	}

	write("  paused: true\n  pause: finish\n")
	hup()
	wait(workitem.PauseState{Paused: true, Finish: true})

	write("  paused: maybe\n") // does not load
	hup()
	select {
	case <-p.set:
		t.Fatal("a file that does not load set the switch")
	case <-time.After(500 * time.Millisecond):
	}

	write("  paused: false\n")
	hup()
	wait(workitem.PauseState{})
}
