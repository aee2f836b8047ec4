package actions_test

import "github.com/bumperdev/bumper/ghemu"

const (
	org  = ghemu.DefaultOrg
	repo = ghemu.DefaultRepo
)
