package slots

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The files of Limits.Dir. Every claim is a file whose open description holds an
// exclusive flock(2) for as long as the claim lasts: a run waiting for a slot
// (wait-<ticket>) or holding one (held-<ticket>), each saying the memory it asks for.
// A file nobody holds locked is left by a process that died, and whoever finds it
// removes it. The directory's lock file serialises looking at the claims and making
// them, for the instant that takes.
const (
	lockFile   = ".lock"
	waitPrefix = "wait-"
	heldPrefix = "held-"
)

// DefaultPoll is how often a waiting run looks again.
const DefaultPoll = time.Second

// ErrTooLarge says a VM asks for more memory than the host allows all its VMs together:
// it would wait for ever.
var ErrTooLarge = errors.New("the VM asks for more memory than this runner host allows its VMs together")

// Host is the runner host's VM slots.
type Host struct {
	lim  Limits
	poll time.Duration
	now  func() time.Time
}

// Option changes a Host.
type Option func(*Host)

// WithPoll sets how often a waiting run looks again (default DefaultPoll).
func WithPoll(d time.Duration) Option { return func(h *Host) { h.poll = d } }

// New checks the limits and makes their directory, mode 0700, owned by this process's
// user; a directory someone else owns, or others may write, is refused: whoever could
// write it could hold every slot.
func New(lim Limits, opts ...Option) (*Host, error) {
	if err := lim.validate(); err != nil {
		return nil, fmt.Errorf("VM slots: %w", err)
	}
	h := &Host{lim: lim, poll: DefaultPoll, now: time.Now}
	for _, o := range opts {
		o(h)
	}
	if err := ownDir(lim.Dir); err != nil {
		return nil, err
	}
	return h, nil
}

// Limits are the host's limits.
func (h *Host) Limits() Limits { return h.lim }

func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to create the VM slots' directory (%s): %w", EnvDir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("failed to read the VM slots' directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("the VM slots' directory %s is not a directory: set %s to one only root may write", dir, EnvDir)
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("the VM slots' directory %s belongs to another user: remove it, or set %s to a directory of the runner's user (root)", dir, EnvDir)
	case fi.Mode().Perm()&0o077 != 0:
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("failed to make the VM slots' directory %s private: %w", dir, err)
		}
	}
	return nil
}

// Wait is what a run waiting for a slot is told each time it looks.
type Wait struct {
	Limits Limits
	// Used is what the running VMs hold; NeedMB what this run asks for.
	Used   Usage
	NeedMB int
	// Ahead is how many runs wait before this one.
	Ahead int
	// Since is when this run began to wait.
	Since time.Time
}

// String is the job log's line.
func (w Wait) String() string {
	ahead := "next in line"
	switch {
	case w.Ahead == 1:
		ahead = "1 run waits before this one"
	case w.Ahead > 1:
		ahead = fmt.Sprintf("%d runs wait before this one", w.Ahead)
	}
	return fmt.Sprintf("waiting for a VM slot: %d of %d VMs (%d of %d MiB) in use on this runner host; this run's VM needs %d MiB, %s (%s, %s)",
		w.Used.VMs, w.Limits.MaxVMs, w.Used.MemoryMB, w.Limits.MemoryMB, w.NeedMB, ahead, EnvMaxVMs, EnvMemoryMB)
}

// Slot is one VM's claim on the host, until Release.
type Slot struct {
	f      *os.File
	path   string
	Waited time.Duration
}

// Release frees the slot; a second call does nothing.
func (s *Slot) Release() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := os.Remove(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	err = errors.Join(err, s.f.Close())
	s.f = nil
	return err
}

// Acquire claims a slot for a VM of needMB MiB, waiting while the host's VMs leave no
// room for it or runs that asked before it still wait: in the order they asked, so none
// waits for ever. While it waits it calls waiting (when not nil) every time it looks. The
// wait ends with ctx, leaving nothing behind. A VM larger than Limits.MemoryMB is
// ErrTooLarge at once.
func (h *Host) Acquire(ctx context.Context, needMB int, waiting func(Wait)) (*Slot, error) {
	if needMB < 1 {
		return nil, fmt.Errorf("a VM of %d MiB: want 1 or more", needMB)
	}
	if needMB > h.lim.MemoryMB {
		return nil, fmt.Errorf("%w: the VM's %d MiB, %s=%d: raise %s on the runner host, or ask for less memory (the action's memory input)",
			ErrTooLarge, needMB, EnvMemoryMB, h.lim.MemoryMB, EnvMemoryMB)
	}
	since := h.now()
	ticket, err := h.enqueue(needMB)
	if err != nil {
		return nil, err
	}
	defer func() {
		if ticket != nil {
			_ = ticket.Release()
		}
	}()
	for {
		slot, w, err := h.try(ticket, needMB)
		if err != nil {
			return nil, err
		}
		if slot != nil {
			ticket = nil // try removed the ticket's file under the lock; its lock goes with it
			slot.Waited = h.now().Sub(since)
			return slot, nil
		}
		if waiting != nil {
			w.Since = since
			waiting(w)
		}
		t := time.NewTimer(h.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("stopped waiting for a VM slot: %w", context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Usage is what the host's VMs hold now, and how many runs wait; claims of dead
// processes are removed on the way.
func (h *Host) Usage() (Usage, error) {
	unlock, err := h.lock()
	if err != nil {
		return Usage{}, err
	}
	defer unlock()
	c, err := h.scan("")
	return c.usage(), err
}

// enqueue takes a ticket: one more than any claim in the directory, so that the runs
// waiting at once are ordered as they asked.
func (h *Host) enqueue(needMB int) (*Slot, error) {
	unlock, err := h.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := h.scan("")
	if err != nil {
		return nil, err
	}
	return h.claim(waitPrefix, c.last+1, needMB)
}

// try takes a slot for ticket when it is first in line and the VM fits; otherwise it
// says what the run waits for.
func (h *Host) try(ticket *Slot, needMB int) (*Slot, Wait, error) {
	unlock, err := h.lock()
	if err != nil {
		return nil, Wait{}, err
	}
	defer unlock()
	mine := filepath.Base(ticket.path)
	c, err := h.scan(mine)
	if err != nil {
		return nil, Wait{}, err
	}
	n, _ := ticketOf(mine)
	ahead := 0
	for _, t := range c.waiting {
		if t < n {
			ahead++
		}
	}
	w := Wait{Limits: h.lim, Used: c.usage(), NeedMB: needMB, Ahead: ahead}
	if ahead > 0 || !h.lim.Fits(w.Used, needMB) {
		return nil, w, nil
	}
	slot, err := h.claim(heldPrefix, n, needMB)
	if err != nil {
		return nil, w, err
	}
	// Under the lock, so no one sees the run both wait and hold.
	if err := ticket.Release(); err != nil {
		_ = slot.Release()
		return nil, w, err
	}
	return slot, w, nil
}

// claim makes a claim file, locked, saying the memory it asks for.
func (h *Host) claim(prefix string, ticket uint64, needMB int) (*Slot, error) {
	path := filepath.Join(h.lim.Dir, fmt.Sprintf("%s%020d", prefix, ticket))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to claim a VM slot: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = os.Remove(path)
		_ = f.Close()
		return nil, fmt.Errorf("failed to lock the VM slot file %s: %w", path, err)
	}
	if _, err := fmt.Fprintf(f, "%d %d\n", needMB, os.Getpid()); err != nil {
		s := &Slot{f: f, path: path}
		_ = s.Release()
		return nil, fmt.Errorf("failed to write the VM slot file %s: %w", path, err)
	}
	return &Slot{f: f, path: path}, nil
}

// lock takes the directory's lock; it is held only while claims are looked at or made.
func (h *Host) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(h.lim.Dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the VM slots' lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("failed to lock the VM slots' directory: %w", err)
	}
	return func() { _ = f.Close() }, nil // closing the description releases the lock
}

// claims is what scan found.
type claims struct {
	held    []int // each holder's memory
	waiting []uint64
	last    uint64 // the highest ticket seen, live or not
}

func (c claims) usage() Usage {
	u := Usage{VMs: len(c.held), Waiting: len(c.waiting)}
	for _, mb := range c.held {
		u.MemoryMB += mb
	}
	return u
}

// scan reads the live claims, the caller's own ticket (mine) among them without
// opening it, and removes those whose process died. The caller holds the lock.
func (h *Host) scan(mine string) (claims, error) {
	var c claims
	entries, err := os.ReadDir(h.lim.Dir)
	if err != nil {
		return c, fmt.Errorf("failed to list the VM slots: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		n, ok := ticketOf(name)
		if !ok {
			continue
		}
		c.last = max(c.last, n)
		if name == mine {
			c.waiting = append(c.waiting, n)
			continue
		}
		mb, live, err := h.inspect(name)
		switch {
		case err != nil:
			return c, err
		case !live:
		case strings.HasPrefix(name, heldPrefix):
			c.held = append(c.held, mb)
		default:
			c.waiting = append(c.waiting, n)
		}
	}
	slices.Sort(c.waiting)
	return c, nil
}

// inspect reads a claim: live while some process holds its lock. One nobody holds is
// removed.
func (h *Host) inspect(name string) (mb int, live bool, err error) {
	path := filepath.Join(h.lim.Dir, name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil // released meanwhile
	}
	if err != nil {
		return 0, false, fmt.Errorf("failed to read the VM slot file %s: %w", path, err)
	}
	defer f.Close()
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
	case err == nil:
		// Its process died (or released it just now): the claim is void.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, false, fmt.Errorf("failed to remove the VM slot file %s of a process that died: %w", path, err)
		}
		return 0, false, nil
	case !errors.Is(err, syscall.EWOULDBLOCK):
		return 0, false, fmt.Errorf("failed to test the VM slot file %s: %w", path, err)
	}
	buf := make([]byte, 64)
	k, _ := f.Read(buf)
	fields := strings.Fields(string(buf[:k]))
	if len(fields) > 0 {
		mb, _ = strconv.Atoi(fields[0])
	}
	// A holder still writing its file (or one that wrote nonsense) counts as the largest
	// VM it could be, so nothing is overcommitted on its account.
	if mb < 1 || mb > h.lim.MemoryMB {
		mb = h.lim.MemoryMB
	}
	return mb, true, nil
}

// ticketOf reads a claim file's ticket.
func ticketOf(name string) (uint64, bool) {
	var rest string
	switch {
	case strings.HasPrefix(name, waitPrefix):
		rest = strings.TrimPrefix(name, waitPrefix)
	case strings.HasPrefix(name, heldPrefix):
		rest = strings.TrimPrefix(name, heldPrefix)
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil
}
