package image

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// progress prints named build steps with their durations for a person watching.
type progress struct {
	w io.Writer
}

// step announces a step and returns the function that reports it finished.
func (p progress) step(ctx context.Context, name string) func(note string) {
	start := time.Now()
	if p.w != nil {
		fmt.Fprintf(p.w, "==> %s\n", name)
	}
	return func(note string) {
		d := time.Since(start)
		zerolog.Ctx(ctx).Info().Str(logKeyStep, name).Dur(logKeyDuration, d).Msg(note)
		if p.w == nil {
			return
		}
		if note != "" {
			note = " (" + note + ")"
		}
		fmt.Fprintf(p.w, "    %s: done in %.1fs%s\n", name, d.Seconds(), note)
	}
}
