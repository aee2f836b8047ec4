package workitemtest

import (
	"fmt"
	"reflect"

	"github.com/bumperdev/bumper/app/workitem"
)

// fault is an injected failure of one method.
type fault struct {
	err  error
	once bool
}

// method checks that a test names a method of workitem.GitHub or workitem.Connector: a
// misspelt name would inject nothing and the test would pass for the wrong reason.
func method(name string) string {
	for _, t := range []reflect.Type{reflect.TypeFor[workitem.GitHub](), reflect.TypeFor[workitem.Connector]()} {
		if _, ok := t.MethodByName(name); ok {
			return name
		}
	}
	panic(fmt.Sprintf("workitemtest: %q is not a method of workitem.GitHub or workitem.Connector", name))
}

// FailNext makes the next call of the method fail with err; calls queue up.
func (g *GitHub) FailNext(name string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults[method(name)] = append(g.faults[name], fault{err: err, once: true})
}

// Fail makes every call of the method fail with err until Heal.
func (g *GitHub) Fail(name string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.faults[method(name)] = []fault{{err: err}}
}

// Heal ends the failures injected for the method.
func (g *GitHub) Heal(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.faults, method(name))
}

// Before runs fn once, at the next call of the method, before GitHub answers it: a
// test stages what happens meanwhile elsewhere (another replica, a person's edit).
func (g *GitHub) Before(name string, fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hooks[method(name)] = append(g.hooks[name], fn)
}

// Calls counts the calls of a method so far.
func (g *GitHub) Calls(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[method(name)]
}

// enter counts a call, runs its staged hooks (without the lock: they may call GitHub)
// and returns its injected failure.
func (g *GitHub) enter(name string) error {
	g.mu.Lock()
	g.calls[name]++
	hooks := g.hooks[name]
	delete(g.hooks, name)
	var err error
	if fs := g.faults[name]; len(fs) > 0 {
		err = fs[0].err
		if fs[0].once {
			g.faults[name] = fs[1:]
		}
	}
	g.mu.Unlock()
	for _, h := range hooks {
		h()
	}
	return err
}
