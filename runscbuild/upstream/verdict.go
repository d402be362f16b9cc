// Package upstream turns patches/series into what is sent to gVisor (Write)
// and checks each pull request alone and all in order as a maintainer
// would (Check).
package upstream

import (
	"fmt"
	"strings"
)

// TreeInfo names a tree a check ran on: the exact commit, and how it was
// made from upstream's.
type TreeInfo struct {
	Name     string   `json:"name"`           // "master" or "go"
	Commit   string   `json:"commit"`         // the commit every row of this tree starts from
	Upstream string   `json:"upstream"`       // the upstream commit it is made from
	Made     []string `json:"made,omitempty"` // what was added or removed to make Commit, one line each
}

// Step is one check's outcome.
type Step struct {
	Ran    bool   `json:"ran"`            // false: not run (an earlier step failed, or nothing to check)
	OK     bool   `json:"ok"`             // meaningful when Ran
	Note   string `json:"note,omitempty"` // short, for the verdict line: "2 files", "x.go:3: undefined: y"
	Detail string `json:"-"`              // long, printed above the verdicts: the tool's output
}

// errStep is a step that failed with err.
func errStep(err error) Step { return Step{Ran: true, Note: err.Error(), Detail: err.Error()} }

func (s Step) word() string {
	switch {
	case !s.Ran:
		return "-"
	case s.OK && s.Note != "":
		return "ok (" + s.Note + ")"
	case s.OK:
		return "ok"
	case s.Note != "":
		return "FAIL (" + s.Note + ")"
	}
	return "FAIL"
}

// PatchRef is one patch file applied in a row, with its sha256.
type PatchRef struct {
	Name   string `json:"name"` // NN-name/000N-subject.patch
	SHA256 string `json:"sha256"`
}

// Result is one row: a pull request's own patches on top of Needs, applied
// to both trees (CheckConfig).
type Result struct {
	Needs   []string   `json:"needs"`   // pull requests applied first, in order
	Patches []PatchRef `json:"patches"` // every patch applied, the needs' first

	MasterApply Step `json:"master_apply"` // git am on master
	Gofmt       Step `json:"gofmt"`        // gofmt -l over the Go files it adds or changes
	BazelSrcs   Step `json:"bazel_srcs"`   // every Go file it adds is named in its folder's BUILD
	OwnTest     Step `json:"own_test"`     // it adds or changes a _test.go file when it changes Go code

	GoApply  Step `json:"go_apply"`  // git am on the go tree (BUILD hunks excluded: it has none)
	Build    Step `json:"build"`     // go build ./runsc/... and the touched packages
	Vet      Step `json:"vet"`       // go vet of the touched packages (tests included)
	Test     Step `json:"test"`      // their unit tests, as nobody, with no host cgroupfs
	OwnTests Step `json:"own_tests"` // a test it adds or changes passed as nobody (judgeOwn)
	Mutants  Step `json:"mutants"`   // alone only: each mutation of its list makes a unit test fail

	GoTree   string   `json:"go_tree,omitempty"`   // "go branch d53e01b47 + master 3c5eee17d's tests + 05-state-file"
	GoCommit string   `json:"go_commit,omitempty"` // its commit
	Tests    Counts   `json:"tests"`               // the top-level unit tests run as nobody
	Own      []Own    `json:"own,omitempty"`       // the test functions the pull request adds or changes
	Mutated  *Mutated `json:"mutations,omitempty"` // each mutation's outcome (alone only)

	Packages []string `json:"packages"` // the Go packages it touches
	Seconds  float64  `json:"seconds"`  // the row's wall time
}

// Counts sums a test step's top-level tests.
type Counts struct {
	Passed  int `json:"passed"`
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

// Own is one test function a pull request adds or changes, and what it
// did as nobody: "pass", "skip", "fail", or "not run".
type Own struct {
	Test   string `json:"test"` // package.TestName
	Status string `json:"status"`
}

// OK reports whether the row applied on both trees and every step that
// ran passed.
func (r Result) OK() bool {
	if !r.MasterApply.OK || !r.GoApply.OK {
		return false
	}
	for _, s := range []Step{r.Gofmt, r.BazelSrcs, r.OwnTest, r.Build, r.Vet, r.Test, r.OwnTests, r.Mutants} {
		if s.Ran && !s.OK {
			return false
		}
	}
	return true
}

// Summary is the row in one line, per tree.
func (r Result) Summary() string {
	master := "am " + r.MasterApply.word()
	if r.MasterApply.OK {
		master += " gofmt " + r.Gofmt.word() + " bazel-srcs " + r.BazelSrcs.word() + " own-test " + r.OwnTest.word()
	}
	goTree := "am " + r.GoApply.word()
	if r.GoApply.OK {
		goTree += " build " + r.Build.word() + " vet " + r.Vet.word() + " test " + r.Test.word()
		if r.OwnTests.Ran {
			goTree += " own-tests " + r.OwnTests.word()
		}
		if r.Mutants.Ran {
			goTree += " mutations " + r.Mutants.word()
		}
	}
	return "master: " + master + "; go: " + goTree
}

// Verdict is a pull request's two rows.
type Verdict struct {
	PR      string   `json:"pr"`
	After   []string `json:"after,omitempty"`   // as the series declares
	Carried bool     `json:"carried,omitempty"` // a carried set: checked as a pull request is, never sent
	Alone   Result   `json:"alone"`             // on top of what it needs
	// InOrder is on top of every earlier pull request; SameAsAlone: those
	// are the patches of Alone, so it was not run twice.
	InOrder     *Result `json:"in_order,omitempty"`
	SameAsAlone bool    `json:"same_as_alone"`
}

// OK reports whether both rows passed.
func (v Verdict) OK() bool {
	return v.Alone.OK() && (v.SameAsAlone || (v.InOrder != nil && v.InOrder.OK()))
}

// name is the PR's name in tables, marked when carried.
func (v Verdict) name() string {
	if v.Carried {
		return v.PR + " (carried)"
	}
	return v.PR
}

// Line is the one-line verdict.
func (v Verdict) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", map[bool]string{true: "carried", false: "PR"}[v.Carried], v.PR)
	if len(v.Alone.Needs) > 0 {
		fmt.Fprintf(&b, " (on %s)", strings.Join(v.Alone.Needs, " "))
	}
	fmt.Fprintf(&b, ": alone: %s | in order: ", v.Alone.Summary())
	switch {
	case v.SameAsAlone:
		b.WriteString("same patches as alone")
	case v.InOrder != nil:
		b.WriteString(v.InOrder.Summary())
	default:
		b.WriteString("not run")
	}
	return b.String() + map[bool]string{true: " => PASS", false: " => FAIL"}[v.OK()]
}
