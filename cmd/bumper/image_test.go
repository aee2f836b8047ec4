package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunImage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "listed in help", args: []string{"help"}, wantCode: 0, wantStdout: "image"},
		{name: "help for image", args: []string{"help", "image"}, wantCode: 0, wantStderr: "--packages"},
		{name: "no subcommand", args: []string{"image"}, wantCode: 2, wantStderr: "want 'bumper image build [flags]'"},
		{name: "unknown subcommand", args: []string{"image", "push"}, wantCode: 2, wantStderr: "want 'bumper image build [flags]'"},
		{name: "extra argument", args: []string{"image", "build", "extra"}, wantCode: 2, wantStderr: "takes no arguments"},
		{name: "bad flag", args: []string{"image", "build", "--nope"}, wantCode: 2, wantStderr: "bumper help image"},
		{name: "bad package name", args: []string{"image", "build", "--mirror", "http://deb.debian.org/debian", "--packages", "git,Bad Name"},
			wantCode: 1, wantStderr: `"Bad Name" is not a Debian package name`},
		{name: "bad mirror", args: []string{"image", "build", "--mirror", "file:///tmp"}, wantCode: 1, wantStderr: "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}
