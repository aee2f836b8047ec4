package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/scriptedmodel"
)

// sampleFS is the sample repository (a Go module whose test fails until the issue is
// fixed, with its policy, the scripted agent and the scripted reviewer) and its issue.
//
//go:embed all:testdata/sample testdata/issue.md
var sampleFS embed.FS

const (
	sampleRoot = "testdata/sample"
	// sampleHarness is the sample policy's harness block, which --agent and --agent-cmd
	// replace.
	sampleHarness = "harness:\n  name: command\n  command: sh .bumper/agent.sh\n"
	policyPath    = ".github/bumper.yml"
)

// Agents are the --agent values.
const (
	AgentCommand    = "command"
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
)

// sampleFiles reads the sample repository's files, by path.
func sampleFiles() (map[string]string, error) {
	files := map[string]string{}
	err := fs.WalkDir(sampleFS, sampleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := sampleFS.ReadFile(p)
		if err != nil {
			return err
		}
		// go.mod is kept under another name: a go.mod would make the directory a module
		// of its own, which go:embed refuses.
		files[strings.TrimSuffix(strings.TrimPrefix(p, sampleRoot+"/"), ".sample")] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to read the sample repository: %w", err)
	}
	return files, nil
}

// Issue is the task: an issue's title and body.
type Issue struct {
	Title string
	Body  string
}

// sampleIssue is the sample repository's issue.
func sampleIssue() Issue {
	b, _ := sampleFS.ReadFile("testdata/issue.md") // embedded: cannot fail
	is, _ := parseIssue(b)
	return is
}

// ReadIssue reads an --issue file: Markdown whose first line is the title and the rest
// the body.
func ReadIssue(file string) (Issue, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Issue{}, fmt.Errorf("failed to read the issue: %w", err)
	}
	is, err := parseIssue(b)
	if err != nil {
		return Issue{}, fmt.Errorf("%s: %w", file, err)
	}
	return is, nil
}

func parseIssue(b []byte) (Issue, error) {
	title, body, _ := strings.Cut(string(b), "\n")
	// A Markdown heading is a fine first line; the title is its text.
	title = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(title), "#"))
	if title == "" {
		return Issue{}, fmt.Errorf("the first line is the issue's title, and it is empty: write the title on the first line and the task below it")
	}
	return Issue{Title: title, Body: strings.TrimSpace(body) + "\n"}, nil
}

// agentPolicy returns the sample's policy with the harness the flags ask for: the
// scripted agent by default, the user's program with --agent-cmd, or a real CLI at the
// release this build pins. The reviewer stays the scripted one: the demo shows the
// review's contract, whoever wrote the change.
func agentPolicy(policy, agent, agentCmd string, scripted bool) (string, error) {
	if !strings.Contains(policy, sampleHarness) {
		return "", fmt.Errorf("the sample's %s has no harness block to replace", policyPath)
	}
	var block string
	switch {
	case agentCmd != "":
		b, err := yaml.Marshal(map[string]map[string]string{"harness": {"name": AgentCommand, "command": agentCmd}})
		if err != nil {
			return "", fmt.Errorf("failed to write the harness block: %w", err)
		}
		block = string(b)
	case agent == AgentCommand:
		return policy, nil
	default:
		cli, ok := harness.DefaultCLI(agent)
		if !ok {
			return "", fmt.Errorf("no pinned release of %s in this build", agent)
		}
		block = "harness:\n  name: " + agent + "\n  version: " + cli.Version + "\n"
		if agent == AgentCodex && scripted {
			// Codex's default model declares its tools in an input item the scripted
			// server does not answer; this one declares exec_command and apply_patch.
			block += "  model: gpt-5.5\n"
		}
	}
	return strings.Replace(policy, sampleHarness, block, 1), nil
}

// fixSed is the sed expression that fixes the sample: the scripted agent's edit
// (.bumper/agent.sh holds the same, which a test checks) and the scripted model's.
const fixSed = `s/for i := 1; i < len(boxes); i++ {/for i := 0; i < len(boxes); i++ {/`

// rangeSed is the change the maintainer asks for in the conversation round (roundAsk),
// as the scripted agent and the scripted model make it: the loop as a range over the
// boxes.
const rangeSed = `s/^\tfor i := 0; i < len(boxes); i++ {$/\tfor _, n := range boxes {/; s/^\t\ttotal += boxes\[i\]$/\t\ttotal += n/`

// roundReplyText is the scripted model's reply in the maintainer's thread.
const roundReplyText = "Total now ranges over the boxes: no index, so no box to skip."

// modelScript is what the scripted model server plays to a real CLI on the sample. The
// server reads no prompt and plays one conversation across runs, so its turns follow
// the demo's arc: the implementing run fixes the loop with a shell command (both CLIs
// have one), runs the tests and says so; the review round's run, a new CLI session,
// makes the change the maintainer asked for, runs the tests, and writes the reply for
// the thread TASK.md names into /out/replies.json.
func modelScript() scriptedmodel.Script {
	return scriptedmodel.Script{
		scriptedmodel.Do(scriptedmodel.RunCommand("cd /workspace/repo && sed -i '" + fixSed + "' widgets.go && go test ./...")),
		scriptedmodel.Say("Total now starts at the first box; go test ./... passes."),
		scriptedmodel.Do(scriptedmodel.RunCommand("cd /workspace/repo && sed -i '" + rangeSed + "' widgets.go && go test ./... && " + repliesCommand)),
		scriptedmodel.Say("Total ranges over the boxes, as the review asked; go test ./... passes, and the reply is in /out/replies.json."),
	}
}

// repliesCommand writes the round's reply: one for the first review thread TASK.md
// names (the thread_id a reply gives).
const repliesCommand = `t=$(sed -n 's/^.*Its review thread is \([0-9]*\): to answer there.*$/\1/p' /workspace/task/TASK.md | head -n 1) && ` +
	`printf '{"schema_version": 1, "replies": [{"thread_id": %s, "changed": true, "body": "%s"}]}\n' "$t" '` + roundReplyText + `' >/out/replies.json`

// sampleSeed is the emulator's world with the sample repository: the default seed's
// organisation, people and App, its repository's files replaced by the sample's.
func sampleSeed(files map[string]string) *ghemu.Seed {
	s := ghemu.DefaultSeed()
	s.Repositories[0].Description = "A small Go project for Bumper's demo"
	s.Repositories[0].Files = files
	return s
}

// workflowPath is where the runner workflow lives in a repository.
var workflowPath = path.Join(ghemu.WorkflowsDir, ghemu.DefaultWorkflow)
