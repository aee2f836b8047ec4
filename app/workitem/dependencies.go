package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// dependenciesHold reads the repositories the policy at the base commit lists under
// dependencies.repositories and checks, before the nonce is spent, that each can be
// granted: the run's owner's, not the run's own, the App installed on it, and readable
// by whoever approved the run (so a writer of one repository cannot read another
// through Bumper that the approver could not read). A plan run gets none: nobody has
// approved anything yet. What does not hold voids the approval, saying what to do.
func (s *Service) dependenciesHold(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt) ([]string, error) {
	rec := it.rec
	if att.Stage == StagePlan {
		return nil, nil
	}
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if err != nil {
		return nil, fmt.Errorf("failed to read the dependencies of %s: %w", rec.ID(), err)
	}
	deps, err := pol.DependenciesOf(rec.Repository)
	if err != nil {
		return nil, s.dependencyRefused(ctx, gh, it, err.Error())
	}
	a := rec.ActiveApproval()
	if len(deps) > 0 && a == nil {
		// mayStart lets no run but a plan run start without one; fail closed all the same.
		return nil, refuse(RefusalApproval, "attempt %d's approval no longer holds", att.Number)
	}
	for _, d := range deps {
		_, err := s.opts.Connector.ForRepository(ctx, d)
		if errors.Is(err, ErrNotFound) {
			return nil, s.dependencyRefused(ctx, gh, it, fmt.Sprintf("the App is not installed on %s, which %s lists under "+
				"dependencies.repositories: install the App on %s (or remove it from the list)", d, repoconfig.Path, d))
		}
		if err != nil {
			return nil, fmt.Errorf("failed to find the installation of %s: %w", d, err)
		}
		lvl, err := gh.Permission(ctx, d, a.By)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("failed to read @%s's permission on %s: %w", a.By, d, err)
		}
		if lvl == "" || lvl == "none" || err != nil {
			return nil, s.dependencyRefused(ctx, gh, it, fmt.Sprintf("@%s, who approved the run, cannot read %s, which %s lists under "+
				"dependencies.repositories: the run may read only what its approver can (someone who can read %s may approve)", a.By, d, repoconfig.Path, d))
		}
	}
	return deps, nil
}

// mintDependencies mints the dependency token: contents: read on exactly deps. GitHub's
// 422 (a repository left the installation since dependenciesHold) voids the approval
// like any other refusal of a dependency.
func (s *Service) mintDependencies(ctx context.Context, gh GitHub, it *item, deps []string) (string, time.Time, error) {
	if len(deps) == 0 {
		return "", time.Time{}, nil
	}
	tok, exp, err := gh.ReadToken(ctx, deps)
	if errors.Is(err, ErrUnprocessable) {
		return "", time.Time{}, s.dependencyRefused(ctx, gh, it, fmt.Sprintf("GitHub refused a read token for %s (the App's installation "+
			"does not cover every one of them): install the App on each repository %s lists under dependencies.repositories",
			strings.Join(deps, ", "), repoconfig.Path))
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("failed to mint the dependency token of %s: %w", it.rec.ID(), err)
	}
	return tok, exp, nil
}

// dependencyRefused refuses a token exchange whose dependencies cannot be granted as
// voidAtMint refuses one whose approval moved: the approval is voided, the item waits
// for another, and the issue says why and what to do.
func (s *Service) dependencyRefused(ctx context.Context, gh GitHub, it *item, why string) error {
	id := s.opts.Sealer.ShortID(it.rec.TextRevision())
	if err := s.voidAtExchange(ctx, gh, it, why,
		fmt.Sprintf("Once that is done, a maintainer can comment `/approve %s` to authorize a run again.", id)); err != nil {
		return err
	}
	return refuse(RefusalDependency, "%s", why)
}
