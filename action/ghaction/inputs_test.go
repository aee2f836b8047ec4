package ghaction

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-githubactions"

	"github.com/bumperdev/bumper/app/wire"
)

const testNonce = "n0nce-5ecret-abcdef0123456789"

// required are the inputs without defaults, as the App and the workflow pass them.
func required() map[string]string {
	return map[string]string{
		"INPUT_URL":       "https://bumper.example.com",
		"INPUT_WORK_ITEM": "acme/widgets#12",
		"INPUT_ATTEMPT":   "2",
		"INPUT_NONCE":     testNonce,
		"INPUT_STAGE":     "implement",
	}
}

func action(env map[string]string) (*githubactions.Action, *bytes.Buffer) {
	var out bytes.Buffer
	return githubactions.New(githubactions.WithWriter(&out), githubactions.WithGetenv(func(k string) string { return env[k] })), &out
}

func TestReadInputsDefaults(t *testing.T) {
	env := required()
	env["RUNNER_TEMP"] = "/runner/_work/_temp"
	env["GITHUB_ACTIONS"] = "true"
	a, out := action(env)
	in, err := ReadInputs(a)
	if err != nil {
		t.Fatal(err)
	}
	want := Inputs{URL: "https://bumper.example.com", WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 12}, Attempt: 2, Nonce: testNonce,
		Stage: "implement", Cache: "/var/cache/bumper", Accel: "auto", CPUs: 2, Memory: "2G",
		Out: "/runner/_work/_temp/bumper-run", QEMUUser: "nobody"}
	if in != want {
		t.Fatalf("ReadInputs =\n%+v\nwant\n%+v", in, want)
	}
	if in.MemoryMB() != 2048 {
		t.Errorf("MemoryMB %d", in.MemoryMB())
	}
	if got := out.String(); got != "::add-mask::"+testNonce+"\n" {
		t.Errorf("inside Actions the nonce must be masked at once, and nothing else said; stdout %q", got)
	}
}

func TestReadInputsEveryInput(t *testing.T) {
	env := required()
	for k, v := range map[string]string{
		"INPUT_URL": "http://10.1.2.3:8080/bumper", "INPUT_ALLOW-INSECURE-HTTP": "true",
		"INPUT_IMAGE": "/var/cache/bumper/images/abc", "INPUT_CACHE": "/srv/bumper", "INPUT_ACCEL": "tcg",
		"INPUT_ALLOW-TCG": "True", "INPUT_CPUS": "4", "INPUT_MEMORY": "1536M", "INPUT_OUT": "/tmp/o",
		"INPUT_QEMU-USER": "bumper-vm", "INPUT_STAGE": "review",
	} {
		env[k] = v
	}
	a, out := action(env)
	in, err := ReadInputs(a)
	if err != nil {
		t.Fatal(err)
	}
	want := Inputs{URL: "http://10.1.2.3:8080/bumper", WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 12}, Attempt: 2, Nonce: testNonce,
		Stage: "review", Image: "/var/cache/bumper/images/abc", Cache: "/srv/bumper", Accel: "tcg", AllowTCG: true,
		CPUs: 4, Memory: "1536M", Out: "/tmp/o", QEMUUser: "bumper-vm", AllowInsecureHTTP: true}
	if in != want {
		t.Fatalf("ReadInputs =\n%+v\nwant\n%+v", in, want)
	}
	if out.Len() != 0 {
		t.Errorf("outside Actions nothing may be printed (a mask command would show the nonce): %q", out.String())
	}
}

// TestReadInputsUnderscoreSpelling: a shell cannot export INPUT_ALLOW-TCG, so by hand
// the underscore spelling works too; GitHub's hyphen spelling wins when both are set.
func TestReadInputsUnderscoreSpelling(t *testing.T) {
	env := required()
	env["INPUT_ALLOW_TCG"] = "true"
	env["INPUT_QEMU_USER"] = "123:456"
	a, _ := action(env)
	in, err := ReadInputs(a)
	if err != nil || !in.AllowTCG || in.QEMUUser != "123:456" {
		t.Fatalf("underscore spelling: %+v, %v", in, err)
	}
	env["INPUT_ALLOW-TCG"] = "false"
	a, _ = action(env)
	if in, err := ReadInputs(a); err != nil || in.AllowTCG {
		t.Fatalf("hyphen spelling must win: %+v, %v", in, err)
	}
}

func TestReadInputsRefusals(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string // "" deletes
		want string
	}{
		{"no url", map[string]string{"INPUT_URL": ""}, "input `url` is empty: set it to serve's base URL (https://…); the runner workflow passes the repository or organisation variable BUMPER_URL"},
		{"plain http off loopback", map[string]string{"INPUT_URL": "http://bumper.example.com"}, "input `url`: serve's URL \"http://bumper.example.com\" is plain http"},
		{"http to loopback", map[string]string{"INPUT_URL": "http://127.0.0.1:8080"}, ""},
		{"url with credentials", map[string]string{"INPUT_URL": "https://u:p@bumper.example.com"}, "must not carry credentials"},
		{"bad insecure flag", map[string]string{"INPUT_ALLOW-INSECURE-HTTP": "yes"}, "input `allow-insecure-http` is \"yes\": want true or false"},
		{"no work item", map[string]string{"INPUT_WORK_ITEM": ""}, "input `work_item` is empty"},
		{"work item without issue", map[string]string{"INPUT_WORK_ITEM": "acme/widgets"}, "input `work_item`: work item \"acme/widgets\": want owner/repo#issue"},
		{"work item issue 0", map[string]string{"INPUT_WORK_ITEM": "acme/widgets#0"}, "want owner/repo#issue"},
		{"no attempt", map[string]string{"INPUT_ATTEMPT": ""}, "input `attempt` is empty"},
		{"attempt 0", map[string]string{"INPUT_ATTEMPT": "0"}, "input `attempt` is \"0\": want the attempt number the App dispatched, 1 or more"},
		{"attempt word", map[string]string{"INPUT_ATTEMPT": "two"}, "input `attempt` is \"two\""},
		{"no nonce", map[string]string{"INPUT_NONCE": ""}, "input `nonce` is empty"},
		{"nonce with a space", map[string]string{"INPUT_NONCE": "a b"}, "input `nonce` is not a nonce the App makes"},
		{"no stage", map[string]string{"INPUT_STAGE": ""}, "input `stage` is empty"},
		{"bad stage", map[string]string{"INPUT_STAGE": "deploy"}, "input `stage` is \"deploy\": want one of plan, implement, fix, review"},
		{"relative image", map[string]string{"INPUT_IMAGE": "images/x"}, "input `image` is \"images/x\": give the image directory's absolute path"},
		{"relative cache", map[string]string{"INPUT_CACHE": "cache"}, "input `cache` is \"cache\": give an absolute directory (default /var/cache/bumper)"},
		{"bad accel", map[string]string{"INPUT_ACCEL": "hvf"}, "input `accel` is \"hvf\": want auto, kvm, tcg"},
		{"bad allow-tcg", map[string]string{"INPUT_ALLOW-TCG": "1"}, "input `allow-tcg` is \"1\": want true or false"},
		{"cpus 0", map[string]string{"INPUT_CPUS": "0"}, "input `cpus` is \"0\": want a number of vCPUs from 1 to 64"},
		{"cpus 65", map[string]string{"INPUT_CPUS": "65"}, "from 1 to 64"},
		{"bad memory", map[string]string{"INPUT_MEMORY": "lots"}, "input `memory`: size \"lots\""},
		{"too little memory", map[string]string{"INPUT_MEMORY": "64M"}, "input `memory` is \"64M\": the guest needs at least 128M"},
		{"relative out", map[string]string{"INPUT_OUT": "out"}, "input `out` is \"out\": give an absolute directory, or leave it empty for $RUNNER_TEMP/bumper-run"},
		{"bad qemu user", map[string]string{"INPUT_QEMU-USER": "no body"}, "input `qemu-user` is \"no body\": want a user name, a uid or uid:gid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := required()
			for k, v := range tt.env {
				env[k] = v
			}
			a, _ := action(env)
			_, err := ReadInputs(a)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestReadInputsEveryProblemAtOnce: one run of the workflow shows everything to fix, and
// the nonce appears in no error, even one about the nonce.
func TestReadInputsEveryProblemAtOnce(t *testing.T) {
	env := map[string]string{"INPUT_ATTEMPT": "-1", "INPUT_NONCE": "bad nonce " + testNonce, "INPUT_STAGE": "x",
		"INPUT_CPUS": "x", "INPUT_ACCEL": "x", "INPUT_MEMORY": "x"}
	a, _ := action(env)
	_, err := ReadInputs(a)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, name := range []string{"url", "work_item", "attempt", "nonce", "stage", "cpus", "accel", "memory"} {
		if !strings.Contains(err.Error(), "input `"+name+"`") {
			t.Errorf("the error does not name input %s:\n%v", name, err)
		}
	}
	if strings.Contains(err.Error(), testNonce) {
		t.Errorf("the error quotes the nonce:\n%v", err)
	}
	if n := strings.Count(err.Error(), "\n"); n != 8 {
		t.Errorf("want a heading and one line per problem (8), got %d lines:\n%v", n, err)
	}
}

func TestOutDefaultOutsideActions(t *testing.T) {
	a, _ := action(required())
	in, err := ReadInputs(a)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(in.Out) != OutDirName || !filepath.IsAbs(in.Out) {
		t.Errorf("Out = %q, want <temp dir>/%s", in.Out, OutDirName)
	}
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{"work_item": "INPUT_WORK_ITEM", "allow-tcg": "INPUT_ALLOW-TCG", "a b": "INPUT_A_B"} {
		if got := EnvName(in); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", in, got, want)
		}
		// go-githubactions must read what EnvName names.
		a, _ := action(map[string]string{want: "v"})
		if a.GetInput(in) != "v" {
			t.Errorf("go-githubactions does not read input %q from %s", in, want)
		}
	}
}
