package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTaskFiles(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	task := Task{WorkItem: "acme/widgets#3", Stage: "implement", SpecRevision: "sha256:" + strings.Repeat("a", 64),
		Title: "Count to 4", Body: "widgets.sh should print 4.\n<!-- hidden, approved as shown -->", Plan: "1. Edit widgets.sh.",
		PlanRevision: "sha256:" + strings.Repeat("b", 64), BaseCommit: strings.Repeat("c", 40),
		Comments: []TaskComment{{Author: "maintainer", CreatedAt: at, Body: "Keep it POSIX."}}}
	files, err := task.Files()
	if err != nil {
		t.Fatal(err)
	}
	md := string(files[TaskMarkdown])
	for _, want := range []string{"# Count to 4", task.Body, "## The approved plan\n\n1. Edit widgets.sh.", "### @maintainer at 2026-12-01T09:30:00Z\n\nKeep it POSIX.", task.SpecRevision} {
		if !strings.Contains(md, want) {
			t.Fatalf("TASK.md lacks %q:\n%s", want, md)
		}
	}
	var back Task
	if err := json.Unmarshal(files[TaskJSON], &back); err != nil || !reflect.DeepEqual(back, task) {
		t.Fatalf("task.json does not round-trip: %v\n%+v", err, back)
	}
	t.Run("no plan, no comments", func(t *testing.T) {
		files, err := Task{Title: "t", Body: "b"}.Files()
		if err != nil {
			t.Fatal(err)
		}
		if md := string(files[TaskMarkdown]); strings.Contains(md, "## ") {
			t.Fatalf("empty sections rendered:\n%s", md)
		}
	})
}
