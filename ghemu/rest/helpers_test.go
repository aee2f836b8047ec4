package rest_test

import (
	"strconv"

	"github.com/bumperdev/bumper/ghemu"
)

const (
	org  = ghemu.DefaultOrg
	repo = ghemu.DefaultRepo
)

func itoa(n int) string { return strconv.Itoa(n) }

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
