package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

// repoRoot is the project's root, seen from this package.
const repoRoot = "../../.."

// CI (.ci/run) builds the clients without the kubelet (about 40 minutes
// cold on 2 cores) and leaves the kubelet cases out of its matrix by name,
// so a bin/kubelet left by an earlier make clients does not bring them in
// (about 4 minutes each under TCG). Without it they skip anyway
// (TestPayloadCarriesTheKubelet, and the runner's TestKubeletStaticSkip).
func TestCIRunLeavesTheKubeletOut(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var makes int
	var skip *regexp.Regexp
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "make clients") && !strings.HasPrefix(l, "make matrix") {
			continue
		}
		makes++
		if !strings.Contains(l, "KUBELET=0") {
			t.Errorf(".ci/run builds the kubelet (no KUBELET=0): %s", l)
		}
		if m := regexp.MustCompile(`-skip '([^']*)'`).FindStringSubmatch(l); m != nil {
			skip = regexp.MustCompile(m[1])
		}
	}
	if makes < 2 || skip == nil {
		t.Fatalf(".ci/run has %d make clients/matrix line(s), skip %v: this test no longer reads it right", makes, skip)
	}
	cases, err := casefile.LoadDir(filepath.Join(repoRoot, "cases"))
	if err != nil {
		t.Fatal(err)
	}
	var kubelet int
	for _, c := range cases {
		for _, cx := range c.CaseContexts() {
			// What the harness matches -skip against.
			name := c.Name + " [" + cx + "]"
			switch {
			case cx == "kubelet-static":
				kubelet++
				if !skip.MatchString(name) {
					t.Errorf("CI's matrix runs %s: its -skip %q lets it in", name, skip)
				}
			case c.Name == "client-cri-pod" && skip.MatchString(name):
				t.Errorf("CI's matrix leaves out %s, the CRI pod case it runs", name)
			}
		}
	}
	if kubelet == 0 {
		t.Error("no case runs in kubelet-static: this test checks nothing")
	}
}

// make clients builds the kubelet; KUBELET=0 leaves it out.
func TestMakeClientsKubeletSwitch(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"clients"}, "cgclients build -kubelet=true"},
		{[]string{"clients", "KUBELET=0"}, "cgclients build -kubelet=false"},
		{[]string{"matrix", "KUBELET=0"}, "cgclients build -kubelet=false"},
	} {
		out, err := exec.Command("make", append([]string{"-n", "-C", repoRoot}, tc.args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %v: %v\n%s", tc.args, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("make -n %v does not run %q:\n%s", tc.args, tc.want, out)
		}
	}
}
