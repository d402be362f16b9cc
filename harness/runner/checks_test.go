package runner

import (
	"testing"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/base/roottest"
)

const checksCase = `
name: checks
purpose: every trial's checks are counted, also those of trials whose records are dropped
source: harness self-test (issue 38)
requires: [root]
trials: 3
sandboxes:
  - name: a
steps:
  - {do: run, sandbox: a}
  - {id: running, do: check, check: {running: a}}
  - {id: elsewhere, do: check, check: {nothingLeft: true}, when: {contexts: [container]}}
  - {do: delete-force, sandbox: a}
  - {id: nothing-left, do: check, check: {nothingLeft: true}}
`

// TestSelfTestChecksCounted: Result.Checks is each trial's check steps
// that ran and its final nothing-left check, summed over the trials,
// though a passing trial after the first keeps no step records; a table
// counts its inputs.
func TestSelfTestChecksCounted(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	rep := runSelfTest(t, checksCase, busybox, "runc-right")
	for _, res := range rep.Results {
		if res.Outcome != report.Pass {
			t.Fatalf("%s: outcome %s, failures %+v", res.Runtime, res.Outcome, res.Failures)
		}
		// running, nothing-left and cleanup, three times; "elsewhere" is
		// skipped in the host context.
		if res.Checks != 9 {
			t.Errorf("%s: %d checks, want 9 (records kept: %d)", res.Runtime, res.Checks, len(res.Steps))
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
	rep = runSelfTest(t, tableCase, busybox, "runc-right")
	for _, res := range rep.Results {
		if res.Checks != 2 {
			t.Errorf("table %s: %d checks, want 2 (its two inputs)", res.Runtime, res.Checks)
		}
	}
	assertNoTestRootLeft(t, rep.RunID)
}
