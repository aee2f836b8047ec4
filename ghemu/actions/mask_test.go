package actions

import (
	"bytes"
	"testing"
)

// TestMaskingWriter: as on GitHub, a registered secret never reaches the job log, even
// when the job prints it in pieces; the ::add-mask:: line itself is not logged.
func TestMaskingWriter(t *testing.T) {
	var log bytes.Buffer
	m := &maskingWriter{w: &log}
	for _, p := range []string{"before s3cr", "et-value\n", "::add-mask::s3cret-value\n", "key=s3cr", "et-value; again s3cret-value\n", "tail s3cret-value"} {
		if _, err := m.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	want := "before s3cret-value\nkey=***; again ***\ntail ***"
	if log.String() != want {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
}

// TestMaskingWriterStopCommands: between ::stop-commands::TOKEN and ::TOKEN:: no line is
// a command, so what a job quotes there cannot register a mask; secrets registered
// before are still hidden, and commands work again after the token.
func TestMaskingWriterStopCommands(t *testing.T) {
	var log bytes.Buffer
	m := &maskingWriter{w: &log}
	for _, l := range []string{"::add-mask::k3y\n", "::stop-commands::tok-1\n", "::add-mask::FAIL\n", "FAIL with k3y\n", "::tok-1::\n", "::add-mask::later\n", "FAIL later\n"} {
		if _, err := m.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	want := "::add-mask::FAIL\nFAIL with ***\nFAIL ***\n"
	if log.String() != want {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
}

// TestMaskingWriterLegacyForm: "##[add-mask]" and "##[stop-commands]" anywhere in a line
// are commands, as GitHub's runner takes them.
func TestMaskingWriterLegacyForm(t *testing.T) {
	var log bytes.Buffer
	m := &maskingWriter{w: &log}
	for _, l := range []string{"fatal: /w/##[add-mask]FAIL\n", "FAIL: widgets.sh printed 5\n", "x ##[stop-commands]tok\n", "##[add-mask]PASS\n", "PASS\n", "::tok::\n"} {
		if _, err := m.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	want := "***: widgets.sh printed 5\n##[add-mask]PASS\nPASS\n"
	if log.String() != want {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
}

// TestCommandsAsLogged: group and annotation commands are in the log as GitHub's runner
// writes them ("##[group]…", "##[error]…"); printed while commands are stopped, they stay
// the text they are, so a reader of the log cannot take a job's quoted output for its
// own groups or errors.
func TestCommandsAsLogged(t *testing.T) {
	var log bytes.Buffer
	m := &maskingWriter{w: &log}
	for _, l := range []string{
		"::group::agent (round 1)\n", "::stop-commands::tok-2\n", "::group::publish\n", "::error::forged\n",
		"::tok-2::\n", "ok: done\n", "::endgroup::\n", "::error file=a.go,line=3::failed:%0Atwo lines, 100%25\n",
		"::warning::careful\n", "::notice title=n::noted\n", "::debug::hidden\n", "::not-a-command\n",
	} {
		if _, err := m.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	want := "##[group]agent (round 1)\n::group::publish\n::error::forged\nok: done\n##[endgroup]\n##[error]failed:\ntwo lines, 100%\n" +
		"##[warning]careful\n##[notice]noted\n::debug::hidden\n::not-a-command\n"
	if log.String() != want {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
}
