package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolStampAndArgs(t *testing.T) {
	tl := Tool{"crictl", CriToolsModule, "v9.9.9", "cmd/crictl", CriToolsModule + "/pkg/version.Version"}
	want := []string{"install", "-trimpath", "-ldflags", "-X sigs.k8s.io/cri-tools/pkg/version.Version=v9.9.9", "sigs.k8s.io/cri-tools/cmd/crictl@v9.9.9"}
	if diff := cmp.Diff(want, tl.InstallArgs()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	a, b := tl.Stamp("go1.1"), tl.Stamp("go1.2")
	if a == b || !strings.Contains(a, "@v9.9.9") || !strings.Contains(a, "CGO_ENABLED=0") {
		t.Errorf("stamps %q %q must name the version, cgo and differ by Go version", a, b)
	}
	tl.Version = "v9.9.10"
	if tl.Stamp("go1.1") == a {
		t.Error("a new version keeps the old stamp")
	}
}

func TestToolsArePinned(t *testing.T) {
	names := map[string]bool{}
	for _, tl := range Tools {
		names[tl.Name] = true
		if !strings.HasPrefix(tl.Version, "v") || strings.Contains(tl.Version, "latest") {
			t.Errorf("%s is not pinned: %q", tl.Name, tl.Version)
		}
		if filepath.Base(tl.Package) != tl.Name {
			t.Errorf("%s: go install names the binary %s", tl.Name, filepath.Base(tl.Package))
		}
	}
	for _, n := range []string{"containerd", "ctr", "containerd-shim-runc-v2", "crictl"} {
		if !names[n] {
			t.Errorf("no tool %s", n)
		}
	}
}

func TestFindNamesTheMissingBinary(t *testing.T) {
	dir := t.TempDir()
	_, err := Find(dir)
	if err == nil || !strings.Contains(err.Error(), "make clients") {
		t.Fatalf("Find in an empty folder: %v", err)
	}
	b := &Binaries{}
	for _, n := range []string{"containerd", "ctr", "containerd-shim-runc-v2", "crictl", "containerd-shim-runsc-v1-patched", "runsc-patched", "containerd-shim-runsc-v1-stock", "runsc-stock"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o755)
	}
	if b, err = Find(dir); err != nil {
		t.Fatal(err)
	}
	if len(b.Paths()) != 8 || b.RunscShim["stock"] != filepath.Join(dir, "containerd-shim-runsc-v1-stock") {
		t.Errorf("paths %v", b.Paths())
	}
	// A pull request's shim (make runsc-prs) needs its runsc too.
	for _, n := range []string{"containerd-shim-runsc-v1-pr-11-shim-state", "containerd-shim-runsc-v1-pr-11-shim-state.stamp"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o644)
	}
	if _, err = Find(dir); err == nil || !strings.Contains(err.Error(), "runsc-pr-11-shim-state is missing") {
		t.Errorf("Find with a pull request's shim and no runsc: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "runsc-pr-11-shim-state"), nil, 0o755)
	if b, err = Find(dir); err != nil {
		t.Fatal(err)
	}
	if len(b.Paths()) != 10 || b.RunscShim["pr-11-shim-state"] != filepath.Join(dir, "containerd-shim-runsc-v1-pr-11-shim-state") {
		t.Errorf("paths %v", b.Paths())
	}
}
