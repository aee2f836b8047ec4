package app

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ghclient"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem"
)

// Waits between start-up rebuilds that GitHub failed: doubling from the first, to the last.
const (
	rebuildFirstWait = 2 * time.Second
	rebuildMaxWait   = time.Minute
)

// rebuildAtStart rebuilds the index until a rebuild succeeds. A rebuild GitHub failed
// (ghclient.Transient: a 5xx or rate limit past ghretry's patience, a broken connection)
// is tried again after a wait that doubles up to a minute, or the longer wait a rate
// limit asked for, /readyz saying why meanwhile: a replica restarted during one of
// GitHub's bad minutes would otherwise exit, and under a supervisor start again into the
// same minute. Any other failure (a wrong private key, an App ID GitHub does not know)
// returns at once, for the admin to fix.
func (s *Server) rebuildAtStart(ctx context.Context) (workitem.RebuildStats, error) {
	wait := s.rebuildWait
	if wait <= 0 {
		wait = rebuildFirstWait
	}
	for attempt := 1; ; attempt++ {
		st, err := s.Rebuild(ctx)
		if err == nil || !ghclient.Transient(err) || ctx.Err() != nil {
			return st, err
		}
		// A rate limit's Retry-After or reset is GitHub's to set: asking again before it
		// ends extends the block.
		pause := max(wait, ghclient.WaitAsked(err, time.Now()))
		zerolog.Ctx(ctx).Warn().Err(err).Int(logkey.Tries, attempt).Dur(logkey.Wait, pause).
			Msg("the start-up rebuild of the ledger failed on GitHub's side; trying again")
		s.ready.retrying(fmt.Sprintf("the start-up rebuild of the ledger from GitHub failed %d time(s), last: %v; trying again in %s",
			attempt, err, pause.Round(time.Second/10)))
		select {
		case <-ctx.Done():
			return st, err
		case <-time.After(pause):
		}
		wait = min(wait*2, rebuildMaxWait)
	}
}
