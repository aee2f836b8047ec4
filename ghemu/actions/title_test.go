package actions

import "testing"

// TestWorkflowTitle: a dispatched run's title is the workflow's run-name with the
// inputs filled in, as GitHub evaluates it, or the workflow's name without one.
func TestWorkflowTitle(t *testing.T) {
	inputs := map[string]string{"work_item": "acme/widgets#1", "attempt": "2"}
	for _, tc := range []struct {
		name, runName, want string
	}{
		{"no run-name", "", "bumper-run"},
		{"inputs", "bumper ${{ inputs.work_item }} attempt ${{ inputs.attempt }}", "bumper acme/widgets#1 attempt 2"},
		{"github.event.inputs, no spaces", "${{github.event.inputs.work_item}}", "acme/widgets#1"},
		{"an input not given is empty", "run ${{ inputs.stage }}.", "run ."},
		{"other expressions are left as written", "${{ github.actor }}", "${{ github.actor }}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := &Workflow{Name: "bumper-run", RunName: tc.runName}
			if got := wf.Title("bumper-run", inputs); got != tc.want {
				t.Errorf("Title = %q, want %q", got, tc.want)
			}
		})
	}
}
