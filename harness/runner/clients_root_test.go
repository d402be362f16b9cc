package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/base/roottest"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/casefile"
)

// TestClientContextsOnThisHost runs the repository's client cases with a
// real containerd on this host, below the harness's test root: runc
// through containerd's runc shim in the ctr and kubelet-cgroupfs contexts,
// and runsc-patched inside a privileged runc pod (cri-privileged). Where
// the runsc shim can start (CAP_SYS_RESOURCE) its rows run too; every
// result must be a pass, a declared divergence or a skip with its reason,
// and the rows that run everywhere must have run. It needs the clients
// (make clients) and runc.
func TestClientContextsOnThisHost(t *testing.T) {
	busybox := "/usr/bin/busybox"
	roottest.Require(t, busybox)
	bin, err := filepath.Abs("../../bin")
	if err != nil {
		t.Fatal(err)
	}
	bins, err := build.Find(bin)
	if err != nil {
		t.Skipf("the real clients are not built (make clients): %v", err)
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Skip("runc is not installed")
	}
	all, err := casefile.LoadDir("../../cases")
	if err != nil {
		t.Fatal(err)
	}
	var cases []*casefile.Case
	for _, c := range all {
		if strings.HasPrefix(c.Name, "client-") {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no client-* case in cases/")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	rep, err := Run(context.Background(), Options{
		Cases: cases,
		Runtimes: []Runtime{
			{Name: Candidate, Path: filepath.Join(bin, "runsc-patched"), Kind: "runsc"},
			{Name: "runc", Path: runc, Kind: "runc"},
		},
		Busybox:     busybox,
		Self:        self,
		CaseTimeout: 3 * time.Minute,
		Progress:    &progress,
		Clients:     bins,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	got := map[string]report.Outcome{}
	for _, res := range rep.Results {
		got[res.Name()+" "+res.Runtime] = res.Outcome
		if res.Outcome == report.Fail {
			t.Errorf("%s %s failed: %+v", res.Name(), res.Runtime, res.Failures)
		}
		if res.Outcome == report.Skip && res.Reason == "" {
			t.Errorf("%s %s skipped without a reason", res.Name(), res.Runtime)
		}
	}
	// runc runs the pause in <pod>/<id> everywhere; on v1 gVisor's shim
	// puts the sandbox in the pod cgroup itself, and the case holds runc's
	// difference as a divergence there.
	criRunc := report.Pass
	if rep.Host.CgroupMode.HasV1Controllers() {
		criRunc = report.Divergence
	}
	for name, want := range map[string]report.Outcome{
		"client-cri-pod [kubelet-cgroupfs] runc":               criRunc,
		"client-ctr-failed-create [ctr] runc":                  report.Pass,
		"client-ctr-same-id [ctr] runc":                        report.Divergence,
		"client-seed-empty-path [cri-privileged] runc":         report.Skip, // a dynamic runc in a busybox container
		"client-seed-empty-path [cri-privileged] " + Candidate: report.Pass,
	} {
		if got[name] != want {
			t.Errorf("%s: %s, want %s", name, got[name], want)
		}
	}
	if t.Failed() {
		t.Logf("progress:\n%s", progress.String())
	}
	assertNoTestRootLeft(t, rep.RunID)
	if _, err := os.Stat("/run/containerd/s"); err == nil {
		ents, _ := os.ReadDir("/run/containerd/s")
		t.Logf("/run/containerd/s holds %d entries after the run (other containerds may share it)", len(ents))
	}
}
