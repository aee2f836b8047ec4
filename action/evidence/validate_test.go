package evidence_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/jsondoc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// schemaFiles are the schemas in schema/, by file name.
func schemaFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range []string{"evidence-v1.json", "decisions-v1.json", "replies-v1.json"} {
		b, err := os.ReadFile("schema/" + name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}

func TestRealisticBundleIsValid(t *testing.T) {
	e := evidencetest.Realistic()
	if err := e.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	evidencetest.Golden(t, "testdata/realistic.json", b, *update)

	back, err := evidence.Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	again, err := back.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, b) {
		t.Errorf("Parse(Marshal(e)) marshals differently:\n%s", again)
	}
}

func TestFixturesAreValid(t *testing.T) {
	e := evidencetest.Failed()
	if err := e.Validate(); err != nil {
		t.Fatalf("failed run: %v", err)
	}
	if e.Ledger.Status != evidence.LedgerInvalid || !strings.Contains(e.Ledger.Error, "/decisions/0/confidence") {
		t.Errorf("ledger = %+v, want invalid naming /decisions/0/confidence", e.Ledger)
	}
	for name, e := range map[string]*evidence.Evidence{"revise": evidencetest.Revise(), "update": evidencetest.Update(), "invalid replies": evidencetest.InvalidReplies()} {
		if err := e.Validate(); err != nil {
			t.Errorf("%s round: %v", name, err)
		}
	}
}

func TestSchemaFiles(t *testing.T) {
	files := schemaFiles(t)
	for _, name := range []string{"evidence-v1.json", "decisions-v1.json", "replies-v1.json"} {
		var doc map[string]any
		if err := json.Unmarshal(files[name], &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema = %v, want draft 2020-12", name, doc["$schema"])
		}
	}
}

// TestSchemaMirrorsTypes checks that every property the schema names appears in the
// realistic or the failed bundle (so the Go types write every field and the fixtures
// set every optional one); the schema's additionalProperties: false checks the other
// way, in TestFixturesAreValid.
func TestSchemaMirrorsTypes(t *testing.T) {
	files := schemaFiles(t)
	docs := map[string]map[string]any{}
	for name, b := range files {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		docs[name] = doc
	}
	var instances []any
	for _, e := range []*evidence.Evidence{evidencetest.Realistic(), evidencetest.Failed(), evidencetest.Revise(), evidencetest.Update(), evidencetest.InvalidReplies()} {
		b, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var inst any
		if err := json.Unmarshal(b, &inst); err != nil {
			t.Fatal(err)
		}
		instances = append(instances, inst)
	}
	// The schema's egress_host serves both lists; only denied hosts have reasons.
	exempt := map[string]bool{"/egress/allowed/*/reasons": true}
	var visit func(file string, schema map[string]any, values []any, path string)
	visit = func(file string, schema map[string]any, values []any, path string) {
		if ref, ok := schema["$ref"].(string); ok {
			refFile, ptr, _ := strings.Cut(ref, "#")
			if refFile != "" {
				file = refFile
			}
			node := any(docs[file])
			for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
				node = node.(map[string]any)[tok]
			}
			schema = node.(map[string]any)
		}
		if props, ok := schema["properties"].(map[string]any); ok {
			for name, ps := range props {
				var vals []any
				for _, v := range values {
					if m, ok := v.(map[string]any); ok {
						if pv, ok := m[name]; ok {
							vals = append(vals, pv)
						}
					}
				}
				if len(vals) == 0 {
					if !exempt[path+"/"+name] {
						t.Errorf("%s/%s: in the schema but in neither fixture", path, name)
					}
					continue
				}
				visit(file, ps.(map[string]any), vals, path+"/"+name)
			}
		}
		if items, ok := schema["items"].(map[string]any); ok {
			var vals []any
			for _, v := range values {
				if a, ok := v.([]any); ok {
					vals = append(vals, a...)
				}
			}
			if len(vals) == 0 {
				t.Errorf("%s: no items in either fixture", path)
				return
			}
			visit(file, items, vals, path+"/*")
		}
	}
	visit("evidence-v1.json", docs["evidence-v1.json"], instances, "")
}

func TestPlanRunNeedsNoApproval(t *testing.T) {
	e := evidencetest.Realistic()
	e.Stage, e.Approvals = wire.StagePlan, nil
	if err := e.Validate(); err != nil {
		t.Fatalf("a plan run without approvals: %v", err)
	}
	e.Stage = wire.StageFix
	wantProblem(t, e.Validate(), "/approvals", "minItems")
}

func TestValidateRejects(t *testing.T) {
	token := "ghs_" + strings.Repeat("A1b2C3d4", 5)
	tests := []struct {
		name   string
		mutate func(e *evidence.Evidence)
		path   string // JSON pointer of the problem
		msg    string // part of its message
	}{
		{"wrong version", func(e *evidence.Evidence) { e.SchemaVersion = 2 }, "/schema_version", "must be 1"},
		{"a steer delivered with no time", func(e *evidence.Evidence) {
			e.Steers = []evidence.Steer{{ID: 1, Author: "a", CreatedAt: e.StartedAt, ArrivedAt: e.StartedAt, Via: evidence.SteerViaFile}}
		}, "/steers/0", "delivered_at"},
		{"a steer delivered in an unknown way", func(e *evidence.Evidence) {
			e.Steers = []evidence.Steer{{ID: 1, Author: "a", CreatedAt: e.StartedAt, ArrivedAt: e.StartedAt, Via: "email", DeliveredAt: e.StartedAt}}
		}, "/steers/0/via", "value must be one of"},
		{"no version", func(e *evidence.Evidence) { e.SchemaVersion = 0 }, "/schema_version", "must be 1"},
		{"missing repository", func(e *evidence.Evidence) { e.WorkItem.Repository = "" }, "/work_item/repository", "does not match pattern"},
		{"missing issue", func(e *evidence.Evidence) { e.WorkItem.Issue = 0 }, "/work_item/issue", "minimum"},
		{"missing base commit", func(e *evidence.Evidence) { e.BaseCommit = "" }, "/base_commit", "does not match pattern"},
		{"short commit", func(e *evidence.Evidence) { e.HeadCommit = "e69de29" }, "/head_commit", "does not match pattern"},
		{"missing revision", func(e *evidence.Evidence) { e.Revision = "" }, "/revision", "does not match pattern"},
		{"short revision hash", func(e *evidence.Evidence) { e.Revision = "sha256:" + evidencetest.Hash(1)[:16] }, "/revision", "does not match pattern"},
		{"hash without its algorithm", func(e *evidence.Evidence) { e.Audit.Head = evidencetest.Hash(3) }, "/audit/head", "does not match pattern"},
		{"upper-case hash", func(e *evidence.Evidence) { e.Sandbox.ImageDigest = strings.ToUpper(evidencetest.SHA(2)) }, "/sandbox/image_digest", "does not match pattern"},
		{"sha1 digest", func(e *evidence.Evidence) { e.Approvals[0].Revision = "sha1:" + evidencetest.Hash(1)[:40] }, "/approvals/0/revision", "does not match pattern"},
		{"approval without comment", func(e *evidence.Evidence) { e.Approvals[0].CommentID = 0 }, "/approvals/0/comment_id", "minimum"},
		{"no approvals for implement", func(e *evidence.Evidence) { e.Approvals = nil }, "/approvals", "minItems"},
		{"unknown stage", func(e *evidence.Evidence) { e.Stage = "deploy" }, "/stage", "value must be one of"},
		{"unknown outcome", func(e *evidence.Evidence) { e.Outcome = "" }, "/outcome", "value must be one of"},
		{"unknown accelerator", func(e *evidence.Evidence) { e.Sandbox.Accel = "hvf" }, "/sandbox/accel", "value must be one of"},
		{"no vCPU", func(e *evidence.Evidence) { e.Sandbox.VCPUs = 0 }, "/sandbox/vcpus", "minimum"},
		{"verification without round", func(e *evidence.Evidence) { e.Phases[6].Round = 0 }, "/phases/6", "round"},
		{"round on another phase", func(e *evidence.Evidence) { e.Phases[0].Round = 1 }, "/phases/0", "not"},
		{"negative count", func(e *evidence.Evidence) { e.Tests[0].Passed = -1 }, "/tests/0/passed", "minimum"},
		{"exit code out of range", func(e *evidence.Evidence) { e.Commands[0].ExitCode = 256 }, "/commands/0/exit_code", "maximum"},
		{"excerpt too long", func(e *evidence.Evidence) { e.Tests[0].Failures[0].Excerpt = strings.Repeat("x", 8193) }, "/tests/0/failures/0/excerpt", "maxLength"},
		{"revoked without time", func(e *evidence.Evidence) { e.Revocation.At = time.Time{} }, "/token_revocation", "at"},
		{"not revoked without reason", func(e *evidence.Evidence) { e.Revocation = evidence.Revocation{} }, "/token_revocation", "reason"},
		{"invalid ledger without error", func(e *evidence.Evidence) { e.Ledger = evidence.Ledger{Status: evidence.LedgerInvalid} }, "/decision_ledger", "error"},
		{"absent ledger with decisions", func(e *evidence.Evidence) { e.Ledger.Status = evidence.LedgerAbsent }, "/decision_ledger/decisions", "maxItems"},
		{"artifact URL not https", func(e *evidence.Evidence) { e.Artifact.URL = "javascript:alert(1)" }, "/artifact/url", "does not match pattern"},

		{"token in a command line", func(e *evidence.Evidence) {
			e.Commands[4].Command = "git push https://x-access-token:" + token + "@github.com/acme/widgets HEAD"
		}, "/commands/4/command", "GitHub token"},
		{"personal token in an excerpt", func(e *evidence.Evidence) {
			e.Tests[0].Failures[0].Excerpt = "env: GH_TOKEN=ghp_" + strings.Repeat("x9Y", 12)
		}, "/tests/0/failures/0/excerpt", "GitHub token"},
		{"fine-grained token in a title", func(e *evidence.Evidence) {
			e.WorkItem.Title = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
		}, "/work_item/title", "fine-grained"},
		{"Anthropic key in a decision", func(e *evidence.Evidence) {
			e.Ledger.Decisions[0].Rationale = "used sk-ant-api03-" + strings.Repeat("Zq9_", 10)
		}, "/decision_ledger/decisions/0/rationale", "Anthropic"},
		{"OpenAI key in a phase detail", func(e *evidence.Evidence) {
			e.Phases[4].Detail = "OPENAI_API_KEY=sk-proj-" + strings.Repeat("aB3xY7", 8)
		}, "/phases/4/detail", "OpenAI"},
		{"bearer token in a denial reason", func(e *evidence.Evidence) {
			e.Egress.Denied[0].Reasons = []string{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"}
		}, "/egress/denied/0/reasons/0", "bearer"},
		{"PEM key in an outcome reason", func(e *evidence.Evidence) {
			e.OutcomeReason = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
		}, "/outcome_reason", "PEM private key"},
		{"token split by a zero-width space", func(e *evidence.Evidence) {
			e.Tests[0].Failures[0].Name = token[:12] + "\u200b" + token[12:]
		}, "/tests/0/failures/0/name", "GitHub token"},

		{"wall time does not match", func(e *evidence.Evidence) { e.WallTimeMS++ }, "/wall_time_ms", "span"},
		{"run ends before it starts", func(e *evidence.Evidence) { e.Finish(e.StartedAt.Add(-time.Second)) }, "/ended_at", "before"},
		{"phase duration does not match", func(e *evidence.Evidence) { e.Phases[2].DurationMS = 1 }, "/phases/2/duration_ms", "span"},
		{"more failures listed than counted", func(e *evidence.Evidence) { e.Tests[0].Failed = 0 }, "/tests/0/failed", "listed"},
		{"diff totals do not add up", func(e *evidence.Evidence) { e.Diff.Insertions++ }, "/diff", "do not match"},
		{"files changed does not match", func(e *evidence.Evidence) { e.Diff.FilesChanged = 2 }, "/diff/files_changed", "listed"},
		{"decisions not least confident first", func(e *evidence.Evidence) {
			d := e.Ledger.Decisions
			d[0], d[2] = d[2], d[0]
		}, "/decision_ledger/decisions/1", "least confident first"},
		{"estimated flag without estimated calls", func(e *evidence.Evidence) { e.Cost.EstimatedCalls = 0 }, "/cost/estimated", "estimated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := evidencetest.Realistic()
			tt.mutate(e)
			wantProblem(t, e.Validate(), tt.path, tt.msg)
		})
	}
}

func TestSecretNeverInError(t *testing.T) {
	e := evidencetest.Realistic()
	secret := "ghp_" + strings.Repeat("Qw3", 12)
	e.Commands[0].Command = "echo " + secret
	err := e.Validate()
	if err == nil {
		t.Fatal("a token in a command was accepted")
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:12]) {
		t.Errorf("the error quotes the secret: %v", err)
	}
}

func TestNotSecrets(t *testing.T) {
	e := evidencetest.Realistic()
	e.OutcomeReason = "disk-image task-force sk-learn-compatibility-layer-for-models " +
		"Bearer authentication is documented; ghs_ prefix; -----BEGIN PUBLIC KEY-----"
	if err := e.Validate(); err != nil {
		t.Errorf("ordinary text taken for a secret: %v", err)
	}
}

func TestRedact(t *testing.T) {
	e := evidencetest.Realistic()
	token := "ghs_" + strings.Repeat("A1b2C3d4", 5)
	e.Tests[0].Failures[0].Excerpt = "fixture key sk-ant-api03-" + strings.Repeat("Zq9_", 10) + " end"
	e.Commands[4].Command = "git push https://x:" + token + "@github.com/acme/widgets"
	paths, err := e.Redact()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/commands/4/command", "/tests/0/failures/0/excerpt"}
	if fmt.Sprint(paths) != fmt.Sprint(want) {
		t.Errorf("Redact paths = %v, want %v", paths, want)
	}
	if err := e.Validate(); err != nil {
		t.Errorf("still invalid after Redact: %v", err)
	}
	if got := e.Tests[0].Failures[0].Excerpt; got != "fixture key [redacted Anthropic API key] end" {
		t.Errorf("excerpt = %q", got)
	}
	if paths, err := evidencetest.Realistic().Redact(); err != nil || paths != nil {
		t.Errorf("Redact of a clean bundle = %v, %v", paths, err)
	}
}

// TestRedactWhatTheAgentWrote attacks Redact as an agent would: token-shaped text in
// every place of the bundle it can write (the decision ledger, a tool's name, which is
// an object key, a changed file's path), two tool names that redact to the same text,
// and a test's output excerpt at the schema's length bound, whose redaction would make
// it longer. After Redact the bundle validates, and neither its JSON, its Markdown nor a
// validation error quotes any of them.
func TestRedactWhatTheAgentWrote(t *testing.T) {
	ghp := "ghp_" + strings.Repeat("aB3", 12)
	secrets := []string{
		ghp,
		"github_pat_" + strings.Repeat("Zz9_", 6),
		"sk-ant-api03-" + strings.Repeat("Xy7", 6),
		"sk-proj-" + strings.Repeat("Pq4", 8),
		"ghs_" + strings.Repeat("Mn5", 8),
	}
	e := evidencetest.Realistic()
	e.Ledger.Decisions[0].Choice = "use the token " + secrets[0] + " for the API"
	e.Ledger.Decisions[1].Rationale = secrets[1]
	e.Harness.ToolCalls[secrets[2]] = 3
	e.Harness.ToolCalls[secrets[3]] = 2
	e.Harness.ToolCalls["mcp "+secrets[4]] = 1
	e.Diff.Files[0].Path = "leak/" + secrets[4] + ".txt"
	e.Risk = risk.Note(e.Diff.Paths())
	excerpt := strings.Repeat("x", evidence.MaxExcerptBytes-len(secrets[2])-1) + " " + secrets[2]
	e.Tests[0].Failures[0].Excerpt = excerpt
	if err := e.Validate(); err == nil {
		t.Fatal("a bundle with tokens validates before Redact")
	} else {
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("the validation error quotes %.12s…: %v", s, err)
			}
		}
	}
	paths, err := e.Redact()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		for _, s := range secrets {
			if strings.Contains(p, s) {
				t.Errorf("Redact's pointer %q quotes a secret", p)
			}
		}
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("still invalid after Redact: %v", err)
	}
	data, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
	for _, s := range secrets {
		if bytes.Contains(data, []byte(s)) || strings.Contains(md, s) {
			t.Errorf("%.12s… is still in the bundle", s)
		}
	}
	if n := e.Harness.ToolCalls["[redacted Anthropic API key]"]; n != 3 {
		t.Errorf("tool calls %v: the Anthropic-key-named tool's 3 calls are not under its redacted name", e.Harness.ToolCalls)
	}
	total := 0
	for _, n := range e.Harness.ToolCalls {
		total += n
	}
	if total != 9+4+2+7+3+2+1 {
		t.Errorf("tool calls %v: %d calls, want every call kept", e.Harness.ToolCalls, total)
	}
	if got := e.Tests[0].Failures[0].Excerpt; len([]rune(got)) > len([]rune(excerpt)) || !strings.Contains(got, "[redacted") {
		t.Errorf("the excerpt grew from %d to %d characters, or lost its mark", len([]rune(excerpt)), len([]rune(got)))
	}
}

func TestMarshalDeterministic(t *testing.T) {
	a, err := evidencetest.Realistic().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, _ := evidencetest.Realistic().Marshal()
		if !bytes.Equal(a, b) {
			t.Fatal("Marshal differs between equal bundles")
		}
	}
	if !bytes.HasSuffix(a, []byte("}\n")) || bytes.HasSuffix(a, []byte("\n\n")) {
		t.Error("Marshal does not end in exactly one newline")
	}

	// The same instants in another zone, nil lists instead of empty ones.
	e := evidencetest.Realistic()
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	e.StartedAt, e.EndedAt = e.StartedAt.In(zone), e.EndedAt.In(zone)
	e.Approvals[0].At = e.Approvals[0].At.In(zone)
	for i := range e.Phases {
		e.Phases[i].StartedAt = e.Phases[i].StartedAt.In(zone)
	}
	e.Tests[1].Failures = []evidence.Failure{}
	b, _ := e.Marshal()
	if !bytes.Equal(a, b) {
		t.Error("times in another zone or empty lists change the bytes")
	}

	// Keys are sorted at every level.
	dec := json.NewDecoder(bytes.NewReader(a))
	var stack [][]string
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				stack = append(stack, nil)
			} else {
				stack = stack[:len(stack)-1]
			}
		case string:
			top := len(stack) - 1
			if top >= 0 && dec.More() { // a key is followed by its value
				keys := stack[top]
				if len(keys) > 0 && keys[len(keys)-1] > v && isKey(a, dec.InputOffset()) {
					t.Errorf("key %q after %q", v, keys[len(keys)-1])
				}
				if isKey(a, dec.InputOffset()) {
					stack[top] = append(keys, v)
				}
			}
		}
	}

	// No HTML escaping.
	e = evidencetest.Realistic()
	e.OutcomeReason = "a <b> & c"
	b, _ = e.Marshal()
	if !bytes.Contains(b, []byte(`"a <b> & c"`)) {
		t.Error("Marshal escapes HTML")
	}
}

// isKey reports whether the string token that ended at off is an object key.
func isKey(data []byte, off int64) bool {
	rest := bytes.TrimLeft(data[off:], " \n")
	return len(rest) > 0 && rest[0] == ':'
}

func TestDigest(t *testing.T) {
	e := evidencetest.Realistic()
	d, err := e.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(d) {
		t.Fatalf("Digest = %q", d)
	}
	if d2, _ := evidencetest.Realistic().Digest(); d2 != d {
		t.Error("Digest differs between equal bundles")
	}
	e.Cost.MeteredCalls++
	if d3, _ := e.Digest(); d3 == d {
		t.Error("Digest does not change with the content")
	}
	e.Ledger.Decisions[0].Confidence = nan()
	if _, err := e.Digest(); err == nil {
		t.Error("Digest of a NaN confidence succeeded")
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestParseRefuses(t *testing.T) {
	good, err := evidencetest.Realistic().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown field", bytes.Replace(good, []byte(`"attempt": 2,`), []byte(`"attempt": 2, "extra": 1,`), 1), "extra"},
		{"duplicate key", bytes.Replace(good, []byte(`"attempt": 2,`), []byte(`"attempt": 2, "attempt": 3,`), 1), "duplicate key"},
		{"trailing data", append(append([]byte{}, good...), "{}"...), "trailing data"},
		{"invalid UTF-8", bytes.Replace(good, []byte("Retry webhook"), []byte("Retry \xff webhook"), 1), "UTF-8"},
		{"not JSON", []byte("evidence"), "not valid JSON"},
		{"short hash", bytes.Replace(good, []byte(evidencetest.SHA(3)), []byte("sha256:abc"), 1), "/audit/head"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evidence.Parse(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// wantProblem checks that err is a *jsondoc.ValidationError with a problem at path
// whose message holds msg.
func wantProblem(t *testing.T, err error, path, msg string) {
	t.Helper()
	var ve *jsondoc.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want a *ValidationError", err)
	}
	for _, p := range ve.Problems {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return
		}
	}
	t.Errorf("no problem at %s mentioning %q; got: %v", path, msg, err)
}

func TestDisagree(t *testing.T) {
	for _, tt := range []struct {
		self, metered int64
		want          bool
	}{
		{100, 100, false}, {120, 100, false}, {80, 100, false},
		{121, 100, true}, {79, 100, true}, {1, 0, true}, {0, 0, false}, {0, 1_000_000, true},
	} {
		if got := evidence.Disagree(tt.self, tt.metered); got != tt.want {
			t.Errorf("Disagree(%d, %d) = %v, want %v", tt.self, tt.metered, got, tt.want)
		}
	}
}

// TestRedactTheGatesFormats: credentials only the output gates know (an AWS key, a
// Slack token, a JWT) in what the agent wrote are masked in the bundle too: a run the
// secrets gate blocked still writes its evidence, and it must not quote them.
func TestRedactTheGatesFormats(t *testing.T) {
	secrets := []string{
		"AKIA" + "Q3ZX7WBN4KEPLM2R",
		"xoxb-" + "123456789012-1234567890123-" + strings.Repeat("aZ9", 8),
		"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6ImNpIn0." + strings.Repeat("Qw8", 12),
	}
	e := evidencetest.Realistic()
	e.Ledger.Decisions[0].Choice = "the key is " + secrets[0]
	e.Ledger.Decisions[1].Rationale = "posted with " + secrets[1]
	e.Tests[0].Failures[0].Excerpt = "Authorization: " + secrets[2]
	if _, err := e.Redact(); err != nil {
		t.Fatal(err)
	}
	data, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(data), s[4:]) {
			t.Errorf("the bundle still quotes %.8s…", s)
		}
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("the redacted bundle does not validate: %v", err)
	}
}
