package upstream

import (
	"testing"
)

func ok(note string) Step { return Step{Ran: true, OK: true, Note: note} }

func passing() Result {
	return Result{
		MasterApply: ok(""), Gofmt: ok(""), BazelSrcs: ok(""), OwnTest: ok("2 test files"),
		GoApply: ok(""), Build: ok(""), Vet: ok(""), Test: ok(""),
	}
}

func TestVerdictLine(t *testing.T) {
	noBuild := passing()
	noBuild.Build = Step{Ran: true, Note: "runsc/container/state_file.go:120:12: s.loadLocked undefined"}
	noBuild.Vet, noBuild.Test = Step{}, Step{}
	noGoApply := passing()
	noGoApply.GoApply = Step{Ran: true, Note: "02-x/0001-y.patch: error: patch failed"}
	noGoApply.Build, noGoApply.Vet, noGoApply.Test = Step{}, Step{}, Step{}
	noMaster := passing()
	noMaster.MasterApply = Step{Ran: true, Note: "02-x/0001-y.patch: error: patch failed"}
	docsOnly := Result{MasterApply: ok(""), GoApply: ok(""), Build: ok("")}
	failedFmt := passing()
	failedFmt.Gofmt = Step{Ran: true, Note: "runsc/cgroup/a.go"}
	on := func(r Result, needs ...string) Result { r.Needs = needs; return r }
	ptr := func(r Result) *Result { return &r }

	for _, tc := range []struct {
		name string
		v    Verdict
		want string
		ok   bool
	}{
		{
			name: "passes",
			v:    Verdict{PR: "01-a", Alone: passing(), SameAsAlone: true},
			want: "PR 01-a: alone: master: am ok gofmt ok bazel-srcs ok own-test ok (2 test files); go: am ok build ok vet ok test ok | in order: same patches as alone => PASS",
			ok:   true,
		},
		{
			name: "does not build on the go tree",
			v:    Verdict{PR: "05-state-file", Alone: noBuild, SameAsAlone: true},
			want: "PR 05-state-file: alone: master: am ok gofmt ok bazel-srcs ok own-test ok (2 test files); go: am ok build FAIL (runsc/container/state_file.go:120:12: s.loadLocked undefined) vet - test - | in order: same patches as alone => FAIL",
		},
		{
			name: "alone passes, in order does not build",
			v:    Verdict{PR: "06-b", Alone: on(passing(), "05-a"), InOrder: ptr(on(noBuild, "01-x", "05-a"))},
			want: "PR 06-b (on 05-a): alone: master: am ok gofmt ok bazel-srcs ok own-test ok (2 test files); go: am ok build ok vet ok test ok | in order: master: am ok gofmt ok bazel-srcs ok own-test ok (2 test files); go: am ok build FAIL (runsc/container/state_file.go:120:12: s.loadLocked undefined) vet - test - => FAIL",
		},
		{
			name: "applies on master, not on go",
			v:    Verdict{PR: "02-x", Alone: noGoApply, SameAsAlone: true},
			want: "PR 02-x: alone: master: am ok gofmt ok bazel-srcs ok own-test ok (2 test files); go: am FAIL (02-x/0001-y.patch: error: patch failed) | in order: same patches as alone => FAIL",
		},
		{
			name: "does not apply on master",
			v:    Verdict{PR: "02-x", Alone: noMaster, SameAsAlone: true},
			want: "PR 02-x: alone: master: am FAIL (02-x/0001-y.patch: error: patch failed); go: am ok build ok vet ok test ok | in order: same patches as alone => FAIL",
		},
		{
			name: "gofmt",
			v:    Verdict{PR: "03-c", Alone: failedFmt, SameAsAlone: true},
			want: "PR 03-c: alone: master: am ok gofmt FAIL (runsc/cgroup/a.go) bazel-srcs ok own-test ok (2 test files); go: am ok build ok vet ok test ok | in order: same patches as alone => FAIL",
		},
		{
			name: "no Go code",
			v:    Verdict{PR: "04-docs", Alone: docsOnly, SameAsAlone: true},
			want: "PR 04-docs: alone: master: am ok gofmt - bazel-srcs - own-test -; go: am ok build ok vet - test - | in order: same patches as alone => PASS",
			ok:   true,
		},
		{
			name: "in order not run",
			v:    Verdict{PR: "07-z", Alone: passing()},
			want: "PR 07-z: alone: master: am ok gofmt ok bazel-srcs ok own-test ok (2 test files); go: am ok build ok vet ok test ok | in order: not run => FAIL",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.Line(); got != tc.want {
				t.Errorf("Line():\n got %s\nwant %s", got, tc.want)
			}
			if got := tc.v.OK(); got != tc.ok {
				t.Errorf("OK() = %v, want %v", got, tc.ok)
			}
		})
	}
}

// TestResultNotApplied: a row that did not apply on a tree never passes,
// whatever its other steps say (a zero Step is "not run", not "ok").
func TestResultNotApplied(t *testing.T) {
	for _, r := range []Result{{}, {MasterApply: ok("")}, {GoApply: ok("")}} {
		if r.OK() {
			t.Errorf("%+v passes", r)
		}
	}
}
