package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// reportPlan posts a plan run's plan, which the guest left in /out.
func (r *run) reportPlan(ctx context.Context, vm *guest) (string, error) {
	if err := vm.collectOut(ctx, r.rec); err != nil {
		return "", err
	}
	plan, err := readSmall(filepath.Join(vm.ws.OutDir, PlanFile), MaxPlanBytes)
	if err != nil {
		return "", failWith(evidence.OutcomeFailure, "the plan run left no usable /out/%s: %w", PlanFile, err)
	}
	if strings.TrimSpace(string(plan)) == "" {
		return "", failWith(evidence.OutcomeFailure, "the plan run left an empty /out/%s", PlanFile)
	}
	r.rec.keep(PlanFile, plan)
	if err := r.link.progress(ctx, "awaiting-approval", string(plan), 0, ""); err != nil {
		return "", err
	}
	return fmt.Sprintf("posted a plan of %d bytes for approval", len(plan)), nil
}
