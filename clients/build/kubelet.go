package build

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// The kubelet, from k8s.io/kubernetes at this version. Its module zip holds
// no staging modules (k8s.io/api, k8s.io/kubelet, ...: go.mod replaces them
// by ./staging/src folders), so the build drops those replaces and requires
// each staging module at its own release (v0.MINOR.PATCH), which the module
// proxy serves.
const (
	KubernetesModule  = "k8s.io/kubernetes"
	KubernetesVersion = "v1.34.2"
)

// KubeletTool is the kubelet's pin, as the other tools list theirs.
var KubeletTool = Kubelet{Module: KubernetesModule, Version: KubernetesVersion}

// Kubelet is k8s.io/kubernetes' cmd/kubelet at one version.
type Kubelet struct {
	Module, Version string
}

// StagingVersion is the release of the staging modules (k8s.io/api ...)
// cut with Kubernetes version v: v1.34.2 -> v0.34.2.
func StagingVersion(v string) (string, error) {
	if !strings.HasPrefix(v, "v1.") || len(v) < 5 {
		return "", fmt.Errorf("%q is not a Kubernetes v1.x version", v)
	}
	return "v0." + strings.TrimPrefix(v, "v1."), nil
}

// UnstageGoMod rewrites k8s.io/kubernetes' go.mod for a build outside its
// repository: every `k8s.io/X => ./staging/src/k8s.io/X` replace is dropped
// and k8s.io/X required at staging instead. It returns the new go.mod and
// the modules it unstaged, sorted.
func UnstageGoMod(data []byte, staging string) ([]byte, []string, error) {
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return nil, nil, err
	}
	var dropped []string
	for _, r := range f.Replace {
		if r.New.Version != "" || r.New.Path != "./staging/src/"+r.Old.Path {
			continue
		}
		dropped = append(dropped, r.Old.Path)
	}
	if len(dropped) == 0 {
		return nil, nil, fmt.Errorf("go.mod replaces no module by ./staging/src: not k8s.io/kubernetes' go.mod")
	}
	sort.Strings(dropped)
	for _, p := range dropped {
		if err := f.DropReplace(p, ""); err != nil {
			return nil, nil, err
		}
		if err := f.AddRequire(p, staging); err != nil {
			return nil, nil, err
		}
	}
	f.Cleanup()
	out, err := f.Format()
	return out, dropped, err
}

// Stamp is what bin/kubelet.stamp holds: everything the binary depends on.
func (k Kubelet) Stamp(goVersion string) string {
	staging, _ := StagingVersion(k.Version)
	return strings.Join([]string{k.Module + "/cmd/kubelet@" + k.Version, "staging modules@" + staging,
		goVersion, "CGO_ENABLED=0", "clients-stamp-v1"}, "\n") + "\n"
}

// BuildArgs is the go command line, run in the unstaged source tree, that
// builds the kubelet into out with its version stamped (otherwise
// --version says v0.0.0-master).
func (k Kubelet) BuildArgs(out, buildDate string) []string {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(k.Version, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	const pkg = "k8s.io/component-base/version"
	ld := []string{
		"-X " + pkg + ".gitVersion=" + k.Version,
		"-X " + pkg + ".gitMajor=" + major,
		"-X " + pkg + ".gitMinor=" + minor,
		"-X " + pkg + ".gitTreeState=clean",
		"-X " + pkg + ".buildDate=" + buildDate,
	}
	return []string{"build", "-trimpath", "-mod=mod", "-ldflags", strings.Join(ld, " "), "-o", out, "./cmd/kubelet"}
}

// EnsureKubelet builds bin/kubelet unless its stamp says it is up to date:
// the module's source is copied from the module cache (without vendor/)
// into WorkDir/kubelet/src, its go.mod unstaged, and ./cmd/kubelet built
// there with CGO_ENABLED=0. About 40 minutes on 2 busy cores.
func EnsureKubelet(c Config, k Kubelet) (string, error) {
	bin := filepath.Join(c.BinDir, "kubelet")
	stampPath := bin + ".stamp"
	want := k.Stamp(runtime.Version())
	if fresh(c, bin, want, k.Module+"@"+k.Version) {
		return bin, nil
	}
	staging, err := StagingVersion(k.Version)
	if err != nil {
		return "", err
	}
	dir, err := downloadModule(c.RepoRoot, k.Module+"@"+k.Version)
	if err != nil {
		return "", err
	}
	src := filepath.Join(c.WorkDir, "kubelet", "src")
	if err := os.RemoveAll(src); err != nil {
		return "", err
	}
	fmt.Fprintf(c.Log, "clients: copying %s@%s into %s\n", k.Module, k.Version, src)
	if err := runscbuild.CopyTree(dir, src, "vendor"); err != nil {
		return "", fmt.Errorf("copying %s: %w", dir, err)
	}
	gomod := filepath.Join(src, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	data, dropped, err := UnstageGoMod(data, staging)
	if err != nil {
		return "", fmt.Errorf("%s: %w", gomod, err)
	}
	if err := os.WriteFile(gomod, data, 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(c.Log, "clients: %d staging modules required at %s instead of ./staging/src\n", len(dropped), staging)
	if err := os.MkdirAll(c.BinDir, 0o755); err != nil {
		return "", err
	}
	_ = os.Remove(stampPath)
	tmp := bin + ".new"
	args := k.BuildArgs(tmp, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(c.Log, "clients: building %s from %s@%s (go %s)\n", bin, k.Module, k.Version, strings.Join(args, " "))
	start := time.Now()
	cmd := runscbuild.Go(src, c.Log, args...)
	cmd.Env = append(cmd.Env, "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false",
		"GOWORK=off") // the module carries a go.work naming ./staging
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kubelet in %s: %w (needs the Go module proxy; see the output above)", src, err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	fmt.Fprintf(c.Log, "clients: %s built in %s\n", bin, time.Since(start).Round(time.Second))
	return bin, os.WriteFile(stampPath, []byte(want), 0o644)
}

// downloadModule returns the module cache folder of path@version.
func downloadModule(repoRoot, pathAtVersion string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", pathAtVersion)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s (needs the Go module proxy)", pathAtVersion, err, strings.TrimSpace(stderr.String()+string(out)))
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("parsing go mod download output: %w", err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no folder: %s", pathAtVersion, m.Error)
	}
	return m.Dir, nil
}
