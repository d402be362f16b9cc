package upstream

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// A pull request's own tests are the test functions its patches add or
// change. Its fix is tested only if one of them runs and passes as nobody:
// a pull request whose own tests all skip there (they need root or a
// cgroupfs), or that runs none, fails, and the mutations it lists could
// not be caught.

// edits are the lines a diff adds or changes in one file of the new tree:
// their numbers, and the points between two lines where it only deletes.
type edits struct {
	lines   []int // new-file line numbers of added lines with more than a brace
	deleted []int // a deletion between new-file lines n and n+1
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// changedLines reads a `git diff -U0` into edits per file of the new tree,
// leaving out blank lines and lone closing braces (-U0 may credit them to
// the function before).
func changedLines(diff string) map[string]*edits {
	out := map[string]*edits{}
	var cur *edits
	line := 0
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "):
			cur = nil
			if p, ok := strings.CutPrefix(l, "+++ b/"); ok {
				cur = &edits{}
				out[p] = cur
			}
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "index "):
		case cur == nil:
		case hunkHeader.MatchString(l):
			m := hunkHeader.FindStringSubmatch(l)
			line, _ = strconv.Atoi(m[1])
			if m[2] == "0" {
				// Only deletes, after new line m[1].
				cur.deleted = append(cur.deleted, line)
			}
		case strings.HasPrefix(l, "+"):
			if t := strings.TrimSpace(l[1:]); t != "" && t != "}" && t != ")" {
				cur.lines = append(cur.lines, line)
			}
			line++
		}
	}
	return out
}

// testFuncs returns the test functions (func TestXxx(t *testing.T)) of Go
// source src that hold one of e's lines or deletions, in file order.
func testFuncs(name string, src []byte, e *edits) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || !isTestName(fd.Name.Name) || fd.Type.Params.NumFields() != 1 {
			continue
		}
		first := fset.Position(fd.Pos()).Line
		if fd.Doc != nil {
			first = fset.Position(fd.Doc.Pos()).Line
		}
		last := fset.Position(fd.End()).Line
		hit := false
		for _, n := range e.lines {
			hit = hit || (n >= first && n <= last)
		}
		for _, n := range e.deleted {
			hit = hit || (n >= first && n+1 <= last)
		}
		if hit {
			out = append(out, fd.Name.Name)
		}
	}
	return out, nil
}

// isTestName is the go command's rule: "Test", then nothing or a
// character that is not a lower-case letter.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	return ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z'))
}

// ownTests lists the test functions that the commits from..HEAD of the go
// tree add or change, as package.TestName, sorted.
func (k *checker) ownTests(from string) ([]string, error) {
	diff, err := gitIn(k.goTree, "diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames", from, "HEAD", "--", "*_test.go")
	if err != nil {
		return nil, err
	}
	var out []string
	for file, e := range changedLines(diff) {
		src, err := os.ReadFile(filepath.Join(k.goTree, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		names, err := testFuncs(file, src, e)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, path.Dir(file)+"."+n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// judgeOwn is the own-tests step of own, the pull request's test functions,
// given the test step's outcomes and sums: it fails when none of own
// passed (when own is empty: when no test of the touched packages did).
func judgeOwn(own []string, ran map[string]map[string]string, counts Counts) (Step, []Own) {
	if len(own) == 0 {
		if counts.Passed == 0 {
			return Step{Ran: true, Note: fmt.Sprintf("it adds or changes no test function, and no test of the touched packages passed (%d skipped, %d failed)", counts.Skipped, counts.Failed)}, nil
		}
		return Step{Ran: true, OK: true, Note: fmt.Sprintf("it adds or changes no test function; %d tests of the touched packages passed", counts.Passed)}, nil
	}
	var list []Own
	by := map[string][]string{}
	for _, t := range own {
		i := strings.LastIndex(t, ".")
		st, ok := ran[t[:i]][t[i+1:]]
		if !ok {
			st = "not run"
		}
		list = append(list, Own{Test: t, Status: st})
		by[st] = append(by[st], t)
	}
	var parts []string
	for _, st := range []string{"pass", "skip", "fail", "not run"} {
		if n := len(by[st]); n > 0 {
			word := map[string]string{"pass": "passed", "skip": "skipped", "fail": "failed", "not run": "not run"}[st]
			p := fmt.Sprintf("%d %s", n, word)
			if st != "pass" {
				p += ": " + strings.Join(by[st], " ")
			}
			parts = append(parts, p)
		}
	}
	note := fmt.Sprintf("%d of its own: %s", len(own), strings.Join(parts, "; "))
	if len(by["pass"]) == 0 {
		switch {
		case len(by["skip"]) == len(own):
			note = "all its own tests skip as nobody: " + note
		case len(by["not run"]) == len(own):
			note = "none of its own tests runs here: " + note
		default:
			note = "none of its own tests passed: " + note
		}
		return Step{Ran: true, Note: note}, list
	}
	return Step{Ran: true, OK: true, Note: note}, list
}
