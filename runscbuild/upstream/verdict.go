// Package upstream turns patches/series into what is sent to gVisor: one
// folder per pull request with the sender's authorship and a filled PR.md
// (Write), and the checks a maintainer would run on each pull request alone
// and on all of them in order (Check).
package upstream

import (
	"fmt"
	"sort"
	"strings"
)

// Tree names where a package was built, vetted and tested.
type Tree string

const (
	// Master is the upstream checkout (Bazel's tree: BUILD files, but no
	// generated Go sources, so most runsc packages do not build with go).
	Master Tree = "master"
	// GoBranch is the pinned gvisor.dev/gvisor module (the go branch:
	// generated sources, no BUILD files), patched without BUILD hunks.
	GoBranch Tree = "go-branch"
)

// Step is one check's outcome.
type Step struct {
	Ran    bool   // false: not run (an earlier step failed, or nothing to check)
	OK     bool   // meaningful when Ran
	Note   string // short, for the verdict line: "2 files", "runsc/x.go"
	Detail string // long, printed above the verdicts: the tool's output
}

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

// Result is one check of a set of patches on both trees: the pull request's
// own patches on top of Needs.
type Result struct {
	Needs []string // pull requests applied first, in order

	// DepsFailed is the dependency whose patches did not apply; nothing
	// else ran.
	DepsFailed string
	// Applied: the pull request's own patches applied with git am on
	// master. ApplyDetail names the patch and hunk that did not.
	Applied     bool
	ApplyDetail string
	// GoBranchApplied: the same set applied to the go-branch tree (BUILD
	// hunks excluded); only needed when a package is checked there.
	GoBranchApplied bool
	GoBranchDetail  string

	Gofmt     Step // gofmt -l over the Go files it adds or changes (master)
	BazelSrcs Step // every Go file it adds is named in its folder's BUILD (master)
	OwnTest   Step // it adds or changes a _test.go file when it changes Go code
	Build     Step
	Vet       Step
	Test      Step

	// Trees says where each touched package was built, vetted and tested.
	Trees map[string]Tree
}

// OK reports whether every check that applies passed.
func (r Result) OK() bool {
	if r.DepsFailed != "" || !r.Applied {
		return false
	}
	for _, s := range []Step{r.Gofmt, r.BazelSrcs, r.OwnTest, r.Build, r.Vet, r.Test} {
		if s.Ran && !s.OK {
			return false
		}
	}
	if r.usesGoBranch() && !r.GoBranchApplied {
		return false
	}
	return true
}

func (r Result) usesGoBranch() bool {
	for _, t := range r.Trees {
		if t == GoBranch {
			return true
		}
	}
	return false
}

// where says which tree the go command ran on: "(go-branch)", "(master)",
// or both with their packages.
func (r Result) where() string {
	by := map[Tree][]string{}
	for pkg, t := range r.Trees {
		by[t] = append(by[t], pkg)
	}
	switch len(by) {
	case 0:
		return ""
	case 1:
		for t := range by {
			return "(" + string(t) + ")"
		}
	}
	var parts []string
	for _, t := range []Tree{Master, GoBranch} {
		pkgs := by[t]
		sort.Strings(pkgs)
		parts = append(parts, string(t)+": "+strings.Join(pkgs, " "))
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

// Summary is the result in one line: "applied gofmt ok ... (go-branch)".
func (r Result) Summary() string {
	if r.DepsFailed != "" {
		return "NOT applied: its dependency " + r.DepsFailed + " does not apply"
	}
	if !r.Applied {
		return "NOT applied (" + firstLine(r.ApplyDetail) + ")"
	}
	parts := []string{"applied",
		"gofmt " + r.Gofmt.word(),
		"bazel-srcs " + r.BazelSrcs.word(),
		"own-test " + r.OwnTest.word(),
	}
	if r.usesGoBranch() && !r.GoBranchApplied {
		parts = append(parts, "go-branch NOT applied ("+firstLine(r.GoBranchDetail)+")")
	}
	parts = append(parts, "build "+r.Build.word(), "vet "+r.Vet.word(), "test "+r.Test.word())
	if w := r.where(); w != "" {
		parts = append(parts, w)
	}
	return strings.Join(parts, " ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Verdict is a pull request's two checks.
type Verdict struct {
	PR    string
	After []string // as the series declares
	Alone Result   // on top of what it needs
	// InOrder is on top of every earlier pull request. SameAsAlone says
	// the two sets of patches are the same, so it was not run twice.
	InOrder     Result
	SameAsAlone bool
}

// OK reports whether both checks passed.
func (v Verdict) OK() bool {
	return v.Alone.OK() && (v.SameAsAlone || v.InOrder.OK())
}

// Line is the one-line verdict.
func (v Verdict) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PR %s", v.PR)
	if len(v.Alone.Needs) > 0 {
		fmt.Fprintf(&b, " (on %s)", strings.Join(v.Alone.Needs, " "))
	}
	fmt.Fprintf(&b, ": alone: %s | in order: ", v.Alone.Summary())
	if v.SameAsAlone {
		b.WriteString("same patches as alone")
	} else {
		b.WriteString(v.InOrder.Summary())
	}
	if v.OK() {
		b.WriteString(" => PASS")
	} else {
		b.WriteString(" => FAIL")
	}
	return b.String()
}
