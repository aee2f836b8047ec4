package agentproto

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestDecodeRun(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		wantErr string
	}{
		{"valid", `{"argv":["true"],"clock_unix_nano":1,"max_procs":64,"workspace":true,"out_max_bytes":10}`, ""},
		{"valid with network", `{"argv":["true"],"max_procs":64,"out_max_bytes":10,"network":{"address":"10.0.2.15/24","gateway":"10.0.2.2"}}`, ""},
		{"valid with input", `{"argv":["true"],"max_procs":64,"out_max_bytes":10,"stdin":true,"steering":true}`, ""},
		{"no argv", `{"argv":[],"max_procs":64,"out_max_bytes":10}`, "no command"},
		{"bad env", `{"argv":["true"],"env":["NOEQUALS"],"max_procs":64,"out_max_bytes":10}`, "KEY=VALUE"},
		{"no proc limit", `{"argv":["true"],"max_procs":0,"out_max_bytes":10}`, "max_procs"},
		{"no out cap", `{"argv":["true"],"max_procs":1,"out_max_bytes":0}`, "out_max_bytes"},
		{"unknown field", `{"argv":["true"],"max_procs":1,"out_max_bytes":1,"exec_on_host":"x"}`, "unknown field"},
		{"gateway off subnet", `{"argv":["true"],"max_procs":1,"out_max_bytes":1,"network":{"address":"10.0.2.15/24","gateway":"10.0.3.2"}}`, "inside 10.0.2.0/24"},
		{"ipv6 address", `{"argv":["true"],"max_procs":1,"out_max_bytes":1,"network":{"address":"fd00::2/64","gateway":"fd00::1"}}`, "IPv4"},
		{"trailing data", `{"argv":["true"],"max_procs":1,"out_max_bytes":1} {}`, "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkDecode[Run](t, tt.payload, tt.wantErr) })
	}
}

func TestDecodeResult(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		wantErr bool
	}{
		{"exit zero", `{"exit_code":0,"out_bytes":0}`, false},
		{"signaled", `{"exit_code":-1,"signal":"killed","out_bytes":0}`, false},
		{"exit too large", `{"exit_code":256,"out_bytes":0}`, true},
		{"exit too small", `{"exit_code":-2,"out_bytes":0}`, true},
		{"negative out", `{"exit_code":0,"out_bytes":-5}`, true},
		{"huge error text", `{"exit_code":1,"error":"` + strings.Repeat("a", maxText+1) + `"}`, true},
		{"not json", `exit 0`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Result
			err := Decode([]byte(tt.payload), &r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Decode = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestDecodePrepare(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		wantErr string
	}{
		{"valid", `{"warm_up":[["sh","-c","echo"],["git","--version"]]}`, ""},
		{"no warm-up", `{}`, ""},
		{"empty command", `{"warm_up":[["echo"],[]]}`, "command 1 is empty"},
		{"empty program", `{"warm_up":[[""]]}`, "command 0 is empty"},
		{"too many", `{"warm_up":[` + strings.TrimSuffix(strings.Repeat(`["true"],`, MaxWarmUp+1), ",") + `]}`, "at most"},
		{"unknown field", `{"warm_up":[],"run_on_host":true}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkDecode[Prepare](t, tt.payload, tt.wantErr) })
	}
}

func TestDecodeSteerFile(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		wantErr string
	}{
		{"valid", `{"name":"001-4711.md","data":"aGVsbG8K"}`, ""},
		{"empty data", `{"name":"a","data":""}`, ""},
		{"no name", `{"name":"","data":""}`, "must be 1 to"},
		{"a path", `{"name":"../../etc/passwd","data":""}`, "must be letters"},
		{"a directory", `{"name":"a/b","data":""}`, "must be letters"},
		{"dot", `{"name":".","data":""}`, "must be letters"},
		{"dot dot", `{"name":"..","data":""}`, "must be letters"},
		{"hidden, as the agent's temporary files", `{"name":".tmp-a","data":""}`, "must be letters"},
		{"a flag", `{"name":"-rf","data":""}`, "must be letters"},
		{"a NUL", `{"name":"a\u0000b","data":""}`, "must be letters"},
		{"a new line", `{"name":"a\nb","data":""}`, "must be letters"},
		{"not ASCII", `{"name":"ａ","data":""}`, "must be letters"},
		{"too long", `{"name":"` + strings.Repeat("a", maxSteerName+1) + `","data":""}`, "must be 1 to"},
		{"too large", `{"name":"a","data":"` + base64.StdEncoding.EncodeToString(make([]byte, MaxSteerFile+1)) + `"}`, "more than the"},
		{"unknown field", `{"name":"a","data":"","mode":"4755"}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkDecode[SteerFile](t, tt.payload, tt.wantErr) })
	}
	t.Run("the largest fits a frame", func(t *testing.T) {
		b, err := Encode(SteerFile{Name: strings.Repeat("a", maxSteerName), Data: make([]byte, MaxSteerFile)})
		if err != nil || len(b)+1 > MaxFrameSize {
			t.Fatalf("largest steer frame: %d bytes, %v", len(b)+1, err)
		}
	})
}

// TestDecodeSteerAck: what a guest says of a file it was sent is bounded and names a
// file as the host names them, or it is refused.
func TestDecodeSteerAck(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		wantErr string
	}{
		{"placed", `{"name":"001-4711.md"}`, ""},
		{"refused", `{"name":"001-4711.md","error":"no space left"}`, ""},
		{"no name", `{"error":"x"}`, "must be 1 to"},
		{"a path", `{"name":"/etc/shadow"}`, "must be letters"},
		{"huge error", `{"name":"a","error":"` + strings.Repeat("e", maxText+1) + `"}`, "exceeds"},
		{"unknown field", `{"name":"a","run":["sh"]}`, "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkDecode[SteerAck](t, tt.payload, tt.wantErr) })
	}
}

// checkDecode decodes payload into a T and checks it fails with wantErr, or succeeds
// when wantErr is empty.
func checkDecode[T any](t *testing.T, payload, wantErr string) {
	t.Helper()
	var v T
	err := Decode([]byte(payload), &v)
	if wantErr == "" {
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("Decode = %v, want error containing %q", err, wantErr)
	}
}
