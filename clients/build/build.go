// Package build makes the real container clients the clients package
// drives: containerd 2.x with its CRI plugin, ctr and the runc shim from
// github.com/containerd/containerd/v2, crictl from sigs.k8s.io/cri-tools, all
// fetched through the Go module proxy at the versions pinned here, and
// gVisor's runsc shim from the same stock and patched trees runsc is built
// from (runscbuild). Everything is built with CGO_ENABLED=0 into an ignored
// folder and rebuilt only when its stamp (module, version, Go version)
// changes.
package build

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// Pinned versions. Debian 12's containerd 1.6 cannot talk to the runsc
// shim (it takes the shim's 2.x start reply for a socket path), so
// containerd comes from the module proxy.
const (
	ContainerdModule  = "github.com/containerd/containerd/v2"
	ContainerdVersion = "v2.4.2"
	CriToolsModule    = "sigs.k8s.io/cri-tools"
	CriToolsVersion   = "v1.37.0"
)

// Tool is one binary built from a module at a pinned version.
type Tool struct {
	Name    string // the binary's name in the bin folder
	Module  string
	Version string
	Package string // the main package, inside Module
	// VersionVar is the variable -ldflags -X stamps with Version.
	VersionVar string
}

// Tools lists the binaries built from the module proxy, in build order.
var Tools = []Tool{
	{"containerd", ContainerdModule, ContainerdVersion, "cmd/containerd", ContainerdModule + "/version.Version"},
	{"ctr", ContainerdModule, ContainerdVersion, "cmd/ctr", ContainerdModule + "/version.Version"},
	{"containerd-shim-runc-v2", ContainerdModule, ContainerdVersion, "cmd/containerd-shim-runc-v2", ContainerdModule + "/version.Version"},
	{"crictl", CriToolsModule, CriToolsVersion, "cmd/crictl", CriToolsModule + "/pkg/version.Version"},
}

// Stamp is what a tool's .stamp file holds: everything its binary depends on.
func (t Tool) Stamp(goVersion string) string {
	return strings.Join([]string{t.Module + "/" + t.Package + "@" + t.Version, goVersion, "CGO_ENABLED=0", "clients-stamp-v1"}, "\n") + "\n"
}

// InstallArgs is the go command line that builds t into GOBIN.
func (t Tool) InstallArgs() []string {
	return []string{"install", "-trimpath", "-ldflags", "-X " + t.VersionVar + "=" + t.Version,
		t.Module + "/" + t.Package + "@" + t.Version}
}

// Binaries are the paths of everything built.
type Binaries struct {
	Containerd, Ctr, RuncShim, Crictl string
	// Kubelet is bin/kubelet, or "" where it was not built (Find does not
	// require it: only the kubelet cases need it, and they skip without).
	Kubelet string
	// RunscShim and Runsc map a flavor ("patched", "stock") to its shim and
	// runsc binaries.
	RunscShim, Runsc map[string]string
}

// Config says where the project and its outputs are.
type Config struct {
	RepoRoot string // go.mod and patches/
	WorkDir  string // gVisor trees (runscbuild)
	BinDir   string // the binaries and their stamps
	Log      io.Writer
	// NoKubelet leaves the kubelet out of All (about 40 minutes cold on
	// 2 cores: CI builds the clients without it).
	NoKubelet bool
}

// EnsureTool builds one tool unless its stamp says it is up to date.
func EnsureTool(c Config, t Tool) (string, error) {
	bin := filepath.Join(c.BinDir, t.Name)
	stampPath := bin + ".stamp"
	want := t.Stamp(runtime.Version())
	if fresh(c, bin, want, t.Module+"@"+t.Version) {
		return bin, nil
	}
	if err := os.MkdirAll(c.BinDir, 0o755); err != nil {
		return "", err
	}
	// go install @version builds outside this module; GOBIN is a private
	// folder so a half-built binary never replaces a good one.
	gobin, err := os.MkdirTemp(c.BinDir, ".gobin-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	_ = os.Remove(stampPath)
	fmt.Fprintf(c.Log, "clients: building %s from %s@%s\n", bin, t.Module, t.Version)
	cmd := runscbuild.Go(gobin, c.Log, t.InstallArgs()...)
	cmd.Env = append(cmd.Env, "GOBIN="+gobin)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w (needs the Go module proxy; see the output above)", strings.Join(t.InstallArgs(), " "), err)
	}
	if err := os.Rename(filepath.Join(gobin, filepath.Base(t.Package)), bin); err != nil {
		return "", fmt.Errorf("storing %s: %w", bin, err)
	}
	return bin, os.WriteFile(stampPath, []byte(want), 0o644)
}

// fresh reports whether bin is there and its stamp says want (what names
// its source in the log).
func fresh(c Config, bin, want, what string) bool {
	if have, err := os.ReadFile(bin + ".stamp"); err == nil && string(have) == want {
		if _, err := os.Stat(bin); err == nil {
			fmt.Fprintf(c.Log, "clients: %s is up to date (%s)\n", bin, what)
			return true
		}
	}
	return false
}

// All builds (or finds up to date) both runscs, both runsc shims and every
// tool.
func All(c Config) (*Binaries, error) {
	rc := runscbuild.Config{RepoRoot: c.RepoRoot, WorkDir: c.WorkDir, BinDir: c.BinDir, Log: c.Log}
	unlock, err := runscbuild.Lock(c.WorkDir, c.Log)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, err := runscbuild.ResolveModule(c.RepoRoot)
	if err != nil {
		return nil, err
	}
	patches, err := runscbuild.ReadSeries(filepath.Join(c.RepoRoot, "patches", "series"))
	if err != nil {
		return nil, err
	}
	b := &Binaries{RunscShim: map[string]string{}, Runsc: map[string]string{}}
	for _, f := range []runscbuild.Flavor{{Name: "stock"}, {Name: "patched", Patches: patches.Patches()}} {
		shim, err := runscbuild.EnsureShim(rc, m, f)
		if err != nil {
			return nil, err
		}
		b.RunscShim[f.Name] = shim
		b.Runsc[f.Name] = filepath.Join(c.BinDir, "runsc-"+f.Name)
	}
	dst := b.tools()
	for _, t := range Tools {
		if *dst[t.Name], err = EnsureTool(c, t); err != nil {
			return nil, err
		}
	}
	if c.NoKubelet {
		fmt.Fprintln(c.Log, "clients: the kubelet is left out (-kubelet=false); the kubelet-static cases skip without it")
		return b, nil
	}
	if b.Kubelet, err = EnsureKubelet(c, KubeletTool); err != nil {
		return nil, err
	}
	return b, nil
}

// Find returns the binaries under binDir without building anything; it
// fails naming the first one missing (run make clients).
func Find(binDir string) (*Binaries, error) {
	binDir, err := filepath.Abs(binDir)
	if err != nil {
		return nil, err
	}
	b := &Binaries{RunscShim: map[string]string{}, Runsc: map[string]string{}}
	for name, p := range b.tools() {
		*p = filepath.Join(binDir, name)
	}
	flavors := []string{"patched", "stock"}
	// And a pull request's build (or what it needs, alone) whose shim make
	// runsc-prs built.
	prs, _ := filepath.Glob(runscbuild.ShimPath(binDir, "pr-*"))
	needs, _ := filepath.Glob(runscbuild.ShimPath(binDir, "needs-*"))
	for _, p := range append(prs, needs...) {
		if !strings.HasSuffix(p, ".stamp") {
			flavors = append(flavors, strings.TrimPrefix(filepath.Base(p), runscbuild.ShimName+"-"))
		}
	}
	for _, f := range flavors {
		b.RunscShim[f] = runscbuild.ShimPath(binDir, f)
		b.Runsc[f] = filepath.Join(binDir, "runsc-"+f)
	}
	for _, p := range b.Paths() {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s is missing (build it with make clients): %w", p, err)
		}
	}
	k := filepath.Join(binDir, "kubelet")
	if _, err := os.Stat(k); err == nil {
		b.Kubelet = k
	}
	return b, nil
}

// tools maps the name of each of Tools to its field.
func (b *Binaries) tools() map[string]*string {
	return map[string]*string{"containerd": &b.Containerd, "ctr": &b.Ctr, "containerd-shim-runc-v2": &b.RuncShim, "crictl": &b.Crictl}
}

// Paths lists every binary Find requires, and the pull requests' shims
// and runscs it found, in a stable order (the kubelet, optional, is not
// among them).
func (b *Binaries) Paths() []string {
	out := []string{b.Containerd, b.Ctr, b.RuncShim, b.Crictl}
	for _, f := range slices.Sorted(maps.Keys(b.RunscShim)) {
		out = append(out, b.RunscShim[f], b.Runsc[f])
	}
	return out
}
