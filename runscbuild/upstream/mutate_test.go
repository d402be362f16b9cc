package upstream

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTestOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want testRun
	}{
		{
			name: "pass, skip, fail; subtests are not counted",
			out: "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: needs root\n--- SKIP: TestB (0.00s)\n" +
				"=== RUN   TestC\n=== RUN   TestC/one\n    --- FAIL: TestC/one (0.00s)\n    --- PASS: TestC/two (0.00s)\n--- FAIL: TestC (0.00s)\nFAIL\n",
			want: testRun{Passed: []string{"TestA"}, Skipped: []string{"TestB"}, Failed: []string{"TestC"}},
		},
		{
			name: "nothing ran",
			out:  "testing: warning: no tests to run\nPASS\n",
		},
		{
			name: "a test that hangs is named",
			out: "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestLock\n=== RUN   TestLock/wait\n" +
				"panic: test timed out after 3m0s\n\trunning tests:\n\t\tTestLock (3m0s)\n\t\tTestLock/wait (3m0s)\n\ngoroutine 1 [running]:\n",
			want: testRun{Passed: []string{"TestA"}, Failed: []string{"TestLock (timed out)"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parseTestOutput(tc.out)); diff != "" {
				t.Errorf("parseTestOutput (-want +got):\n%s", diff)
			}
		})
	}
	got := parseTestOutput("--- PASS: TestA (0s)\n--- SKIP: TestB (0s)\npanic: test timed out after 1s\n\trunning tests:\n\t\tTestC (1s)\n").status()
	if diff := cmp.Diff(map[string]string{"TestA": "pass", "TestB": "skip", "TestC": "fail"}, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// testSrc is a test file as a patch leaves it: TestOld untouched, TestNew
// added after it, TestChanged with one line changed, TestDeleted with a
// line removed.
const testSrc = `package a

import "testing"

func TestOld(t *testing.T) {
	t.Log("old")
}

// TestNew is new.
func TestNew(t *testing.T) {
	t.Log("new")
}

func helper() {}

func TestChanged(t *testing.T) {
	t.Log("changed")
}

func TestDeleted(t *testing.T) {
	t.Log("kept")
}

func Testlower(t *testing.T) {}
`

func TestOwnTestFunctions(t *testing.T) {
	// git diff -U0 of testSrc against the file before: -U0 credits the
	// closing brace of TestOld to the lines TestNew adds.
	diff := `diff --git a/a/a_test.go b/a/a_test.go
index 1111111..2222222 100644
--- a/a/a_test.go
+++ b/a/a_test.go
@@ -6,0 +7,6 @@ func TestOld(t *testing.T) {
+}
+
+// TestNew is new.
+func TestNew(t *testing.T) {
+	t.Log("new")
+}
@@ -12 +18 @@ func helper() {}
-	t.Log("before")
+	t.Log("changed")
@@ -16 +21,0 @@ func TestDeleted(t *testing.T) {
-	t.Log("gone")
diff --git a/b/gone_test.go b/b/gone_test.go
deleted file mode 100644
--- a/b/gone_test.go
+++ /dev/null
@@ -1,3 +0,0 @@
-package b
`
	e := changedLines(diff)
	if _, ok := e["b/gone_test.go"]; ok || len(e) != 1 {
		t.Errorf("changedLines: %v, want a/a_test.go only", e)
	}
	want := &edits{lines: []int{9, 10, 11, 18}, deleted: []int{21}}
	if diff := cmp.Diff(want, e["a/a_test.go"], cmp.AllowUnexported(edits{})); diff != "" {
		t.Errorf("changedLines (-want +got):\n%s", diff)
	}
	got, err := testFuncs("a/a_test.go", []byte(testSrc), e["a/a_test.go"])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"TestNew", "TestChanged", "TestDeleted"}, got); diff != "" {
		t.Errorf("testFuncs (-want +got):\n%s", diff)
	}
	// Testlower is not a test for the go command.
	if got, _ := testFuncs("a/a_test.go", []byte(testSrc), &edits{lines: []int{29}}); len(got) != 0 {
		t.Errorf("testFuncs on Testlower: %v, want none", got)
	}
}

func TestJudgeOwn(t *testing.T) {
	ran := map[string]map[string]string{
		"runsc/container": {"TestCreateFailure": "skip", "TestOther": "pass"},
		"runsc/cgroup":    {"TestPath": "pass", "TestRoot": "skip"},
	}
	for _, tc := range []struct {
		name   string
		own    []string
		ran    map[string]map[string]string
		counts Counts
		ok     bool
		note   string
		list   []Own
	}{
		{
			name: "its one test skips as nobody",
			own:  []string{"runsc/container.TestCreateFailure"}, ran: ran, counts: Counts{Passed: 2, Skipped: 2},
			note: "all its own tests skip as nobody: 1 of its own: 1 skipped: runsc/container.TestCreateFailure",
			list: []Own{{Test: "runsc/container.TestCreateFailure", Status: "skip"}},
		},
		{
			name: "its tests are in files not run here",
			own:  []string{"runsc/container.TestDestroy"}, ran: ran, counts: Counts{Passed: 2},
			note: "none of its own tests runs here: 1 of its own: 1 not run: runsc/container.TestDestroy",
			list: []Own{{Test: "runsc/container.TestDestroy", Status: "not run"}},
		},
		{
			name: "one passes, one skips, one does not run",
			own:  []string{"runsc/cgroup.TestPath", "runsc/cgroup.TestRoot", "runsc/container.TestDestroy"}, ran: ran, counts: Counts{Passed: 2},
			ok:   true,
			note: "3 of its own: 1 passed; 1 skipped: runsc/cgroup.TestRoot; 1 not run: runsc/container.TestDestroy",
			list: []Own{{Test: "runsc/cgroup.TestPath", Status: "pass"}, {Test: "runsc/cgroup.TestRoot", Status: "skip"}, {Test: "runsc/container.TestDestroy", Status: "not run"}},
		},
		{
			name:   "no test function of its own, every test skips",
			counts: Counts{Skipped: 3},
			note:   "it adds or changes no test function, and no test of the touched packages passed (3 skipped, 0 failed)",
		},
		{
			name: "no test function of its own, no test at all",
			note: "it adds or changes no test function, and no test of the touched packages passed (0 skipped, 0 failed)",
		},
		{
			name:   "no test function of its own, others pass",
			counts: Counts{Passed: 4, Skipped: 1},
			ok:     true,
			note:   "it adds or changes no test function; 4 tests of the touched packages passed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, list := judgeOwn(tc.own, tc.ran, tc.counts)
			if !s.Ran || s.OK != tc.ok || s.Note != tc.note {
				t.Errorf("judgeOwn: %+v\nwant ran, OK %v, note %q", s, tc.ok, tc.note)
			}
			if diff := cmp.Diff(tc.list, list); diff != "" {
				t.Errorf("own tests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMutatedStep(t *testing.T) {
	mu := func(block int, broken string) Mutation {
		return Mutation{Block: block, File: "runsc/container/state_file.go", Line: "\terr = os.Rename(tmp, path)", Broken: broken}
	}
	caught := Mutant{Mutation: mu(1, "\terr = nil"), Outcome: Caught, CaughtBy: []string{"runsc/container.TestSaveReplacesWhole"}}
	survived := Mutant{Mutation: mu(2, "\terr = os.WriteFile(path, data, 0640)"), Outcome: Survived}
	noCompile := Mutant{Mutation: mu(3, "\terr = os.Rename(tmp)"), Outcome: DoesNotCompile, Note: "state_file.go:120:18: not enough arguments"}
	for _, tc := range []struct {
		name string
		m    Mutated
		ok   bool
		word string
	}{
		{name: "all caught", m: Mutated{Blocks: 1, Results: []Mutant{caught}}, ok: true, word: "ok (caught 1 of 1)"},
		{name: "one survives", m: Mutated{Blocks: 2, Results: []Mutant{caught, survived}},
			word: `FAIL (caught 1 of 2; survived: block 2 runsc/container/state_file.go "err = os.WriteFile(path, data, 0640)")`},
		{name: "one does not compile", m: Mutated{Blocks: 2, Results: []Mutant{caught, noCompile}},
			word: `FAIL (caught 1 of 2; does not compile: block 3 runsc/container/state_file.go "err = os.Rename(tmp)": state_file.go:120:18: not enough arguments)`},
		{name: "an invalid block", m: Mutated{Blocks: 2, Results: []Mutant{caught}, Invalid: []string{"patches/05-x/mutations: block 2: has 2 lines"}},
			word: "FAIL (caught 1 of 2; invalid: patches/05-x/mutations: block 2: has 2 lines)"},
		{name: "the tree was not restored", m: Mutated{Blocks: 1, Results: []Mutant{caught}, Error: "block 1: the go tree is not as the row left it"},
			word: "FAIL (caught 1 of 1; block 1: the go tree is not as the row left it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.m.Step()
			if s.OK != tc.ok || s.word() != tc.word {
				t.Errorf("Step: OK %v %s\nwant OK %v %s", s.OK, s.word(), tc.ok, tc.word)
			}
			// The pull request's verdict follows.
			r := passing()
			r.Mutants, r.Mutated = s, &tc.m
			v := Verdict{PR: "05-x", Alone: r, SameAsAlone: true}
			if v.OK() != tc.ok || !strings.Contains(v.Line(), " mutations "+tc.word) {
				t.Errorf("verdict OK %v, line %s\nwant OK %v and mutations %s", v.OK(), v.Line(), tc.ok, tc.word)
			}
			md := (&Report{Verdicts: []Verdict{v}}).Markdown()
			for _, m := range tc.m.Results {
				if m.Outcome != Caught && !strings.Contains(md, m.Outcome+": block") {
					t.Errorf("report does not name %s block %d:\n%s", m.Outcome, m.Block, md)
				}
			}
		})
	}
}

// TestOwnTestsFailTheRow: a row whose own tests all skip fails, as one
// with a surviving mutation does.
func TestOwnTestsFailTheRow(t *testing.T) {
	r := passing()
	r.OwnTests, _ = judgeOwn([]string{"runsc/container.TestCreateFailureRemovesCgroup"}, map[string]map[string]string{"runsc/container": {"TestCreateFailureRemovesCgroup": "skip"}}, Counts{Skipped: 1})
	v := Verdict{PR: "02-failed-create", Alone: r, SameAsAlone: true}
	if v.OK() || !strings.Contains(v.Line(), "own-tests FAIL (all its own tests skip as nobody") {
		t.Errorf("verdict OK %v: %s", v.OK(), v.Line())
	}
}

func TestReadMutationLists(t *testing.T) {
	needTools(t)
	f := newFixture(t, []prChange{
		{pr: "01-a", subject: "a: doc", files: map[string]string{"README.md": "a\n"}},
		{pr: "02-b", subject: "b: doc", files: map[string]string{"README.md": "b\n"}},
		{pr: "03-c", subject: "c: doc", files: map[string]string{"README.md": "c\n"}},
	})
	write(t, f.patches, map[string]string{
		"01-a/mutations": "a/a.go\n\tx\n\ty\n\na/a.go\n\tx\n\na/a.go\n\tz\n\tz\n",
		"02-b/mutations": "a/a.go\n\tx\n\ty\n",
	})
	c := f.config(t, "pr 01-a\n"+patchName(t, f.patches, "01-a")+"pr 02-b\n"+patchName(t, f.patches, "02-b")+"pr 03-c\n"+patchName(t, f.patches, "03-c"), &bytes.Buffer{})
	lists, err := readMutationLists(c.Series)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(f.patches) + "/01-a/mutations"
	a := lists["01-a"]
	if a == nil || a.name != name || a.blocks != 3 || len(a.mutations) != 1 || len(a.invalid) != 2 ||
		!strings.HasPrefix(a.invalid[0], name+": block 2: has 2 lines") || !strings.HasPrefix(a.invalid[1], name+": block 3: the broken line is the line itself") {
		t.Errorf("01-a's list: %+v", a)
	}
	if b := lists["02-b"]; b == nil || b.blocks != 1 || len(b.invalid) != 0 || len(b.sha256) != 64 {
		t.Errorf("02-b's list: %+v", b)
	}
	if _, ok := lists["03-c"]; ok {
		t.Errorf("03-c has no list, got one")
	}
}

// TestCheckMutations: on the go tree of a pull request alone, each
// mutation of its list runs alone; one its tests catch passes, one they do
// not, one that does not compile and one whose line is not in the tree
// fail it. A pull request whose own test skips fails. PRS= checks only
// the pull requests named. A carried set gets the same rows.
func TestCheckMutations(t *testing.T) {
	needTools(t)
	f := newFixture(t, []prChange{
		{pr: "01-m", subject: "a: two, and Even", files: map[string]string{
			"a/a.go":      "package a\n\n// A is two.\nfunc A() int {\n\tx := 2\n\treturn x\n}\n\n// Even says whether n is even.\nfunc Even(n int) bool {\n\treturn n%2 == 0\n}\n",
			"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {\n\tif A() != 2 {\n\t\tt.Fatal(A())\n\t}\n}\n",
		}},
		{pr: "02-skip", subject: "c: add one", files: map[string]string{
			"c/c.go":      "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's plus one.\nfunc C() int { return gen.N + 1 }\n",
			"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {\n\tt.Skip(\"needs root\")\n\tif C() != 8 {\n\t\tt.Fatal(C())\n\t}\n}\n",
		}},
		{pr: "03-all-caught", subject: "c: add two", files: map[string]string{
			"c/c.go":      "package c\n\nimport \"example.com/up/gen\"\n\n// C is gen's plus two.\nfunc C() int {\n\treturn gen.N + 2\n}\n",
			"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestC(t *testing.T) {\n\tif C() != 9 {\n\t\tt.Fatal(C())\n\t}\n}\n",
		}},
		{pr: "04-unchecked", subject: "a: doc", files: map[string]string{"README.md": "more\n"}},
		{pr: "90-ours", subject: "a: add D", files: map[string]string{
			"a/d.go":      "package a\n\n// D is four.\nfunc D() int {\n\treturn 4\n}\n",
			"a/d_test.go": "package a\n\nimport \"testing\"\n\nfunc TestD(t *testing.T) {\n\tif D() != 4 {\n\t\tt.Fatal(D())\n\t}\n}\n",
			"a/BUILD":     "go_library(\n    name = \"a\",\n    srcs = [\"d.go\"],\n)\n\ngo_test(\n    name = \"a_test\",\n    srcs = [\"d_test.go\"],\n)\n",
		}},
	})
	write(t, f.patches, map[string]string{
		"01-m/mutations": "a/a.go\n\tx := 2\n\tx := 3\n\n" + // caught by TestA
			"a/a.go\n\treturn n%2 == 0\n\treturn n%2 != 0\n\n" + // no test of Even: survives
			"a/a.go\n\treturn x\n\treturn y\n\n" + // does not compile
			"a/a.go\n\treturn 2\n\treturn 3\n\n" + // not in the tree
			"a/a.go\n\tx := 2\n", // two lines
		"03-all-caught/mutations": "c/c.go\n\treturn gen.N + 2\n\treturn gen.N + 1\n",
		"90-ours/mutations":       "a/d.go\n\treturn 4\n\treturn 5\n",
		"90-ours/CARRY.md":        "# ours\n",
	})
	var log bytes.Buffer
	c := f.config(t, "pr 01-m\n"+patchName(t, f.patches, "01-m")+"pr 02-skip\n"+patchName(t, f.patches, "02-skip")+
		"pr 03-all-caught after 02-skip\n"+patchName(t, f.patches, "03-all-caught")+"pr 04-unchecked\n"+patchName(t, f.patches, "04-unchecked")+
		"carry 90-ours after 01-m\n"+patchName(t, f.patches, "90-ours"), &log)
	c.Only = []string{"01-m", "02-skip", "03-all-caught", "90-ours"}
	rep, err := Check(c)
	if err != nil {
		t.Fatalf("Check: %v\n%s", err, log.String())
	}
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", log.String())
		}
	}()
	if len(rep.Verdicts) != 4 {
		t.Fatalf("%d verdicts, want 4 (PRS: 01-m 02-skip 03-all-caught 90-ours)", len(rep.Verdicts))
	}
	m, skip, all, ours := rep.Verdicts[0], rep.Verdicts[1], rep.Verdicts[2], rep.Verdicts[3]

	if m.OK() || !m.Alone.Test.OK || !m.Alone.OwnTests.OK || m.Alone.Mutated == nil {
		t.Fatalf("01-m: %s", m.Line())
	}
	var got []string
	for _, r := range m.Alone.Mutated.Results {
		got = append(got, r.Outcome+" "+strings.Join(r.CaughtBy, " "))
	}
	if diff := cmp.Diff([]string{"caught a.TestA", "SURVIVED ", "does not compile "}, got); diff != "" {
		t.Errorf("01-m's mutations (-want +got):\n%s", diff)
	}
	if r := m.Alone.Mutated.Results[2]; !strings.HasPrefix(r.Note, "a/a.go:") {
		t.Errorf("the mutation that does not compile: %q, want the compiler's error", r.Note)
	}
	if inv := m.Alone.Mutated.Invalid; len(inv) != 2 || !strings.Contains(inv[0], "01-m/mutations: block 4: a/a.go has the line \"\\treturn 2\" 0 times") || !strings.Contains(inv[1], "01-m/mutations: block 5: has 2 lines") {
		t.Errorf("01-m's invalid blocks: %q", inv)
	}
	if want := "mutations FAIL (caught 1 of 5; survived: block 2 a/a.go \"return n%2 != 0\"; does not compile: block 3"; !strings.Contains(m.Line(), want) {
		t.Errorf("01-m's verdict does not say %q:\n%s", want, m.Line())
	}

	if skip.OK() || !skip.Alone.Test.OK || skip.Alone.OwnTests.OK || !strings.Contains(skip.Alone.OwnTests.Note, "all its own tests skip as nobody: 1 of its own: 1 skipped: c.TestC") {
		t.Errorf("02-skip: %s", skip.Line())
	}
	if skip.Alone.Mutants.Note != "no mutations listed" {
		t.Errorf("02-skip's mutations: %+v", skip.Alone.Mutants)
	}

	if !all.Alone.OK() || all.Alone.Mutated == nil || all.Alone.Mutated.Caught() != 1 || all.Alone.Mutated.Results[0].CaughtBy[0] != "c.TestC" {
		t.Errorf("03-all-caught alone: %s", all.Line())
	}
	if all.InOrder == nil || all.InOrder.Mutants.Ran || all.InOrder.Mutated != nil {
		t.Errorf("03-all-caught in order: mutations run there too: %+v", all.InOrder)
	}
	if want := "go branch " + f.goCommit[:9] + " + master " + f.master[:9] + "'s tests + 02-skip + 03-all-caught"; all.Alone.GoTree != want || len(all.Alone.GoCommit) != 40 {
		t.Errorf("03-all-caught's tree: %q %q, want %q and its commit", all.Alone.GoTree, all.Alone.GoCommit, want)
	}
	if all.Alone.Tests != (Counts{Passed: 1}) {
		t.Errorf("03-all-caught's tests: %+v", all.Alone.Tests)
	}

	// A carried set is checked as a pull request is: alone on what it
	// names, its mutations run there; in order on everything before it.
	if !ours.OK() || !ours.Carried || ours.Alone.Mutated == nil || ours.Alone.Mutated.Caught() != 1 || ours.InOrder == nil ||
		!strings.HasPrefix(ours.Line(), "carried 90-ours (on 01-m): ") {
		t.Errorf("90-ours: %s", ours.Line())
	}

	md := rep.Markdown()
	for _, want := range []string{
		"| 90-ours (carried) | go branch " + f.goCommit[:9] + " + master " + f.master[:9] + "'s tests + 01-m + 90-ours (`",
		"| 01-m | go branch " + f.goCommit[:9] + " + master " + f.master[:9] + "'s tests + 01-m (`",
		"| 2 passed, 0 skipped, 0 failed | ok (1 of its own: 1 passed) | **caught 1 of 5**<br>SURVIVED: block 2 a/a.go `return n%2 != 0`<br>does not compile: block 3 a/a.go `return y`<br>2 invalid block(s), below | **FAIL** |",
		"| 02-skip |", "FAIL (all its own tests skip as nobody: 1 of its own: 1 skipped: c.TestC) | no mutations listed | **FAIL** |",
		"- block 1, a/a.go: `x := 2` → `x := 3`: caught by a.TestA",
		"- block 2, a/a.go: `return n%2 == 0` → `return n%2 != 0`: **SURVIVED**",
		"- **invalid**: " + filepath.Base(f.patches) + "/01-m/mutations: block 5: has 2 lines",
		"caught 1 of 1",
		"Only these pull requests were checked (PRS=): 01-m 02-skip 03-all-caught 90-ours.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report does not say %q:\n%s", want, md)
		}
	}
	// Each mutation ran on the tree the row left, and the tree came back.
	if st := mustGit(t, filepath.Join(c.Work, "go"), "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("the go tree is not clean after the mutations:\n%s", st)
	}
}
