package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// NobodySandbox runs a unit test binary where it cannot touch the host's
// cgroups: as nobody, with no capabilities, in a private mount namespace
// whose /sys/fs/cgroup (and systemd's and D-Bus's /run) is an empty
// read-only tmpfs. Tests that need more belong in the VMs.
func NobodySandbox(cmd *exec.Cmd) (*exec.Cmd, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the unit tests run as nobody in a private mount namespace without the host's cgroupfs, which takes root to set up: run make upstream-check as root")
	}
	const script = `set -e
mount -t tmpfs -o ro,size=4k,mode=0555 upstream-check-no-cgroups /sys/fs/cgroup
for d in /run/dbus /run/systemd; do [ ! -d "$d" ] || mount -t tmpfs -o ro,size=4k upstream-check-hidden "$d"; done
exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"`
	w := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", cmd.Path}, cmd.Args[1:]...)...)
	w.Dir, w.Env, w.Stdin, w.Stdout, w.Stderr = cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr
	return w, nil
}

var (
	topTest = regexp.MustCompile(`^--- (PASS|SKIP|FAIL): (\S+)`)
	// A test binary that runs out of time panics and names the tests
	// still running, one a line, with their time.
	timedOut     = regexp.MustCompile(`^panic: test timed out after `)
	stillRunning = regexp.MustCompile(`^\s+(Test\S*) \(\S+\)$`)
)

// testRun is a test binary's top-level tests by outcome.
type testRun struct {
	Passed, Skipped, Failed []string
}

// parseTestOutput reads -test.v output. A test running when the binary
// timed out failed: it is named with " (timed out)".
func parseTestOutput(out string) testRun {
	var r testRun
	timeout := false
	for _, l := range strings.Split(out, "\n") {
		m := topTest.FindStringSubmatch(l)
		switch {
		case m != nil:
			list := map[string]*[]string{"PASS": &r.Passed, "SKIP": &r.Skipped, "FAIL": &r.Failed}[m[1]]
			*list = append(*list, m[2])
		case timedOut.MatchString(l):
			timeout = true
		case timeout && stillRunning.MatchString(l):
			name := stillRunning.FindStringSubmatch(l)[1]
			if top, _, _ := strings.Cut(name, "/"); !slices.Contains(r.Failed, top) && !slices.Contains(r.Failed, top+" (timed out)") {
				r.Failed = append(r.Failed, top+" (timed out)")
			}
		}
	}
	return r
}

// status maps each top-level test to "pass", "skip" or "fail".
func (r testRun) status() map[string]string {
	m := map[string]string{}
	for _, t := range r.Passed {
		m[t] = "pass"
	}
	for _, t := range r.Skipped {
		m[t] = "skip"
	}
	for _, t := range r.Failed {
		t, _, _ = strings.Cut(t, " ")
		m[t] = "fail"
	}
	return m
}

// testTimeout is each test binary's -test.timeout.
const testTimeout = 10 * time.Minute

// test compiles each package's unit tests into Work/bin and runs them in
// the sandbox, in the package's folder, each for at most timeout. It
// records k.failed (a binary that fails without a FAIL line: "(exit)"),
// k.ran and k.counts; k.hard when a test binary does not compile.
func (k *checker) test(label string, pkgs []string, timeout time.Duration) Step {
	k.failed, k.hard = map[string][]string{}, false
	k.ran, k.counts = map[string]map[string]string{}, Counts{}
	// nobody runs the binaries and writes its temporary files here.
	tmp := filepath.Join(k.bin, "tmp")
	if err := errors.Join(os.RemoveAll(k.bin), os.MkdirAll(tmp, 0o755), os.Chmod(k.bin, 0o755), os.Chmod(tmp, 0o1777)); err != nil {
		return errStep(err)
	}
	var notes []string
	var detail strings.Builder
	for _, pkg := range pkgs {
		tests, err := filepath.Glob(filepath.Join(k.goTree, filepath.FromSlash(pkg), "*_test.go"))
		if err != nil || len(tests) == 0 {
			notes = append(notes, pkg+": no tests")
			continue
		}
		args := []string{"test", "-c", "-o", filepath.Join(k.bin, strings.ReplaceAll(pkg, "/", "_")+".test")}
		if _, vetOnly := k.VetOnly[pkg]; vetOnly {
			overlay, n, err := k.overlay(pkg)
			if err != nil {
				return errStep(err)
			}
			if n == len(tests) {
				notes = append(notes, pkg+": vetted only")
				continue
			}
			args = append(args, "-overlay", overlay)
		}
		bin := args[3]
		if _, err := goIn(k.goTree, append(args, "./"+pkg)...); err != nil {
			k.hard = true
			return Step{Ran: true, Note: pkg + ": " + goError(err), Detail: err.Error()}
		}
		cmd := exec.Command(bin, "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
		cmd.Dir = filepath.Join(k.goTree, filepath.FromSlash(pkg))
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "TEST_TMPDIR="+tmp, "HOME="+tmp)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if k.Sandbox != nil {
			if cmd, err = k.Sandbox(cmd); err != nil {
				k.hard = true
				return errStep(err)
			}
		}
		runErr := cmd.Run()
		logFile := filepath.Join(k.Work, "logs", logName(label), strings.ReplaceAll(pkg, "/", "_")+".out")
		if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err == nil {
			_ = os.WriteFile(logFile, out.Bytes(), 0o644)
		}
		res := parseTestOutput(out.String())
		fail := res.Failed
		if runErr != nil && len(fail) == 0 {
			fail = append(fail, "(exit)")
		}
		k.ran[pkg] = res.status()
		k.counts.Passed += len(res.Passed)
		k.counts.Skipped += len(res.Skipped)
		k.counts.Failed += len(fail)
		if len(fail) > 0 {
			k.failed[pkg] = fail
			fmt.Fprintf(&detail, "%s (%s, output in %s):\n%s\n", pkg, runErrText(runErr), logFile, failureLines(out.String()))
		}
		notes = append(notes, fmt.Sprintf("%s: %d passed, %d skipped, %d failed", pkg, len(res.Passed), len(res.Skipped), len(fail)))
	}
	s := Step{Ran: true, OK: len(k.failed) == 0, Note: strings.Join(notes, "; "), Detail: detail.String()}
	if !s.OK {
		s.Note = "failed: " + failedList(k.failed) + "; " + s.Note
	}
	return s
}

func runErrText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// overlay writes a go command overlay that deletes pkg's upstream test
// files (the go tree's base commit's), and says how many.
func (k *checker) overlay(pkg string) (string, int, error) {
	out, err := gitIn(k.goTree, "ls-tree", "--name-only", k.goBase, "--", pkg+"/")
	if err != nil {
		return "", 0, err
	}
	replace := map[string]string{}
	for _, f := range strings.Fields(out) {
		if strings.HasSuffix(f, "_test.go") {
			if _, err := os.Stat(filepath.Join(k.goTree, f)); err == nil {
				replace[filepath.Join(k.goTree, filepath.FromSlash(f))] = ""
			}
		}
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", 0, err
	}
	p := filepath.Join(k.bin, strings.ReplaceAll(pkg, "/", "_")+".overlay.json")
	return p, len(replace), os.WriteFile(p, b, 0o644)
}

// judgeTests passes a test step whose only failures already fail before
// any patch (checkBase), and says so.
func (k *checker) judgeTests(s Step) Step {
	if !s.Ran || s.OK || k.hard || len(failures(k.failed, k.baseFailures)) > 0 {
		return s
	}
	s.OK = true
	s.Note = "only tests that fail before any patch failed: " + failedList(k.failed)
	return s
}

// failedList lists m's failing tests as package.Test, sorted, joined.
func failedList(m map[string][]string) string { return strings.Join(failures(m, nil), " ") }

// failures lists m's failing tests base does not, as package.Test, sorted.
func failures(m, base map[string][]string) []string {
	var out []string
	for pkg, tests := range m {
		for _, t := range tests {
			if !slices.Contains(base[pkg], t) {
				out = append(out, pkg+"."+t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// logName makes a row's label ("[3/21] 02-x alone") a folder name.
func logName(label string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, strings.ToLower(label)), "_")
}

var testMessage = regexp.MustCompile(`^\s+\S+_test\.go:\d+: |--- FAIL: |^panic: |^FAIL`)

// failureLines keeps the FAIL lines, t.Error and t.Fatal messages, a panic
// and the last lines of a test binary's output.
func failureLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if testMessage.MatchString(l) && len(keep) < 60 {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\nlast lines:\n" + tail(out, 12)
}
