package web

import "sync"

// sessions are placeholders until the forms land.
type sessions struct{ mu sync.Mutex }

func newSessions() *sessions { return &sessions{} }
