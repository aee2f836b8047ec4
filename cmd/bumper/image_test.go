package main

import "testing"

func TestRunImage(t *testing.T) {
	runCLICases(t, []cliCase{
		{name: "listed in help", args: []string{"help"}, wantCode: 0, wantStdout: "image"},
		{name: "help for image", args: []string{"help", "image"}, wantCode: 0, wantStderr: "--packages"},
		{name: "no subcommand", args: []string{"image"}, wantCode: 2, wantStderr: "want 'bumper image build [flags]'"},
		{name: "unknown subcommand", args: []string{"image", "push"}, wantCode: 2, wantStderr: "want 'bumper image build [flags]'"},
		{name: "extra argument", args: []string{"image", "build", "extra"}, wantCode: 2, wantStderr: "takes no arguments"},
		{name: "bad flag", args: []string{"image", "build", "--nope"}, wantCode: 2, wantStderr: "bumper help image"},
		{name: "bad package name", args: []string{"image", "build", "--mirror", "http://deb.debian.org/debian", "--packages", "git,Bad Name"},
			wantCode: 1, wantStderr: `"Bad Name" is not a Debian package name`},
		{name: "bad mirror", args: []string{"image", "build", "--mirror", "file:///tmp"}, wantCode: 1, wantStderr: "not an http(s) URL"},
	})
}
