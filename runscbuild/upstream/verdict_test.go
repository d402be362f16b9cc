package upstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ok(note string) Step { return Step{Ran: true, OK: true, Note: note} }

func passing(trees map[string]Tree) Result {
	return Result{
		Applied: true, GoBranchApplied: true,
		Gofmt: ok(""), BazelSrcs: ok(""), OwnTest: ok("2 test files"),
		Build: ok(""), Vet: ok(""), Test: ok(""),
		Trees: trees,
	}
}

func TestVerdictLine(t *testing.T) {
	goBranch := map[string]Tree{"runsc/cgroup": GoBranch, "runsc/container": GoBranch}
	mixed := map[string]Tree{"runsc/cgroup": GoBranch, "pkg/x": Master, "pkg/a": Master}
	failedFmt := passing(goBranch)
	failedFmt.Gofmt = Step{Ran: true, Note: "runsc/cgroup/a.go"}
	noTest := passing(goBranch)
	noTest.OwnTest = Step{Ran: true, Note: "no _test.go added or changed"}
	noGoBranch := passing(goBranch)
	noGoBranch.GoBranchApplied, noGoBranch.GoBranchDetail = false, "patch 02-x/0003-y.patch does not apply\nfailing hunk: ..."
	noGoBranch.Build, noGoBranch.Vet, noGoBranch.Test = Step{}, Step{}, Step{}
	vetFails := passing(map[string]Tree{"pkg/a": Master})
	vetFails.Vet = Step{Ran: true, Detail: "x.go:1: bad"}
	noGo := Result{Applied: true, Trees: map[string]Tree{}} // touches only BUILD or docs
	on := func(r Result, needs ...string) Result { r.Needs = needs; return r }

	for _, tc := range []struct {
		name string
		v    Verdict
		want string
		ok   bool
	}{
		{
			name: "first, passes",
			v:    Verdict{PR: "01-levels", Alone: passing(goBranch), SameAsAlone: true},
			want: "PR 01-levels: alone: applied gofmt ok bazel-srcs ok own-test ok (2 test files) build ok vet ok test ok (go-branch) | in order: same patches as alone => PASS",
			ok:   true,
		},
		{
			name: "on its dependencies, both trees",
			v:    Verdict{PR: "03-x", After: []string{"02-y"}, Alone: on(passing(mixed), "01-a", "02-y"), InOrder: on(passing(mixed), "01-a", "02-y", "02b-z")},
			want: "PR 03-x (on 01-a 02-y): alone: applied gofmt ok bazel-srcs ok own-test ok (2 test files) build ok vet ok test ok (master: pkg/a pkg/x; go-branch: runsc/cgroup) | in order: applied gofmt ok bazel-srcs ok own-test ok (2 test files) build ok vet ok test ok (master: pkg/a pkg/x; go-branch: runsc/cgroup) => PASS",
			ok:   true,
		},
		{
			name: "does not apply alone, does in order",
			v:    Verdict{PR: "04-b", Alone: Result{ApplyDetail: "04-b/0001-x.patch: error: patch failed: runsc/cgroup/BUILD:34\nmore"}, InOrder: on(passing(goBranch), "01-a")},
			want: "PR 04-b: alone: NOT applied (04-b/0001-x.patch: error: patch failed: runsc/cgroup/BUILD:34) | in order: applied gofmt ok bazel-srcs ok own-test ok (2 test files) build ok vet ok test ok (go-branch) => FAIL",
		},
		{
			name: "dependency does not apply",
			v:    Verdict{PR: "02-b", Alone: Result{Needs: []string{"01-a"}, DepsFailed: "01-a"}, SameAsAlone: true},
			want: "PR 02-b (on 01-a): alone: NOT applied: its dependency 01-a does not apply | in order: same patches as alone => FAIL",
		},
		{
			name: "gofmt and own test",
			v:    Verdict{PR: "05-c", Alone: failedFmt, InOrder: noTest},
			want: "PR 05-c: alone: applied gofmt FAIL (runsc/cgroup/a.go) bazel-srcs ok own-test ok (2 test files) build ok vet ok test ok (go-branch) | in order: applied gofmt ok bazel-srcs ok own-test FAIL (no _test.go added or changed) build ok vet ok test ok (go-branch) => FAIL",
		},
		{
			name: "go branch does not take it",
			v:    Verdict{PR: "06-d", Alone: noGoBranch, SameAsAlone: true},
			want: "PR 06-d: alone: applied gofmt ok bazel-srcs ok own-test ok (2 test files) go-branch NOT applied (patch 02-x/0003-y.patch does not apply) build - vet - test - (go-branch) | in order: same patches as alone => FAIL",
		},
		{
			name: "vet fails on master",
			v:    Verdict{PR: "07-e", Alone: vetFails, SameAsAlone: true},
			want: "PR 07-e: alone: applied gofmt ok bazel-srcs ok own-test ok (2 test files) build ok vet FAIL test ok (master) | in order: same patches as alone => FAIL",
		},
		{
			name: "no Go code",
			v:    Verdict{PR: "08-f", Alone: noGo, SameAsAlone: true},
			want: "PR 08-f: alone: applied gofmt - bazel-srcs - own-test - build - vet - test - | in order: same patches as alone => PASS",
			ok:   true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.v.Line()); diff != "" {
				t.Errorf("Line (-want +got):\n%s", diff)
			}
			if got := tc.v.OK(); got != tc.ok {
				t.Errorf("OK = %v, want %v", got, tc.ok)
			}
		})
	}
}
