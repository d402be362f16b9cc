package build

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
)

// A cut of k8s.io/kubernetes' go.mod: staging modules required at v0.0.0
// and replaced by ./staging/src folders the module zip does not carry.
const kubeGoMod = `module k8s.io/kubernetes

go 1.24.0

require (
	github.com/google/go-cmp v0.7.0
	k8s.io/api v0.0.0
	k8s.io/kubelet v0.0.0
	k8s.io/utils v0.0.0-20250604170112-4c0f3b243397
)

require k8s.io/cri-client v0.0.0 // indirect

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/cri-client => ./staging/src/k8s.io/cri-client
	k8s.io/kubelet => ./staging/src/k8s.io/kubelet
	github.com/example/other => github.com/example/fork v1.0.0
	k8s.io/utils => ./third_party/utils
)
`

func TestStagingVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v1.34.2", "v0.34.2"},
		{"v1.35.0-rc.1", "v0.35.0-rc.1"},
	} {
		got, err := StagingVersion(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("StagingVersion(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "v2.0.0", "1.34.2"} {
		if _, err := StagingVersion(bad); err == nil {
			t.Errorf("StagingVersion(%q) took it", bad)
		}
	}
}

func TestUnstageGoMod(t *testing.T) {
	out, dropped, err := UnstageGoMod([]byte(kubeGoMod), "v0.34.2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"k8s.io/api", "k8s.io/cri-client", "k8s.io/kubelet"}, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	f, err := modfile.Parse("go.mod", out, nil)
	if err != nil {
		t.Fatalf("rewritten go.mod does not parse: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, r := range f.Require {
		got[r.Mod.Path] = r.Mod.Version
	}
	want := map[string]string{
		"github.com/google/go-cmp": "v0.7.0",
		"k8s.io/api":               "v0.34.2",
		"k8s.io/kubelet":           "v0.34.2",
		"k8s.io/cri-client":        "v0.34.2",
		"k8s.io/utils":             "v0.0.0-20250604170112-4c0f3b243397",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requires (-want +got):\n%s", diff)
	}
	var kept []string
	for _, r := range f.Replace {
		kept = append(kept, r.Old.Path+" => "+r.New.Path)
	}
	if diff := cmp.Diff([]string{"github.com/example/other => github.com/example/fork", "k8s.io/utils => ./third_party/utils"}, kept); diff != "" {
		t.Errorf("only the staging replaces go (-want +got):\n%s", diff)
	}
	if strings.Contains(string(out), "./staging") {
		t.Errorf("a staging folder is still named:\n%s", out)
	}
}

func TestUnstageGoModWithoutStagingFails(t *testing.T) {
	if _, _, err := UnstageGoMod([]byte("module k8s.io/kubernetes\n\ngo 1.24.0\n"), "v0.34.2"); err == nil {
		t.Error("a go.mod without staging replaces is not k8s.io/kubernetes'; want an error")
	}
}

func TestKubeletBuildArgsAndStamp(t *testing.T) {
	k := Kubelet{Module: KubernetesModule, Version: "v1.34.2"}
	args := k.BuildArgs("/out/kubelet", "2026-01-02T03:04:05Z")
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"build", "-trimpath", "-mod=mod", "-o /out/kubelet", "./cmd/kubelet",
		"k8s.io/component-base/version.gitVersion=v1.34.2",
		"k8s.io/component-base/version.gitMajor=1",
		"k8s.io/component-base/version.gitMinor=34",
		"k8s.io/component-base/version.gitTreeState=clean",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("build args %q lack %q", joined, want)
		}
	}
	a := k.Stamp("go1.1")
	if !strings.Contains(a, "k8s.io/kubernetes/cmd/kubelet@v1.34.2") || !strings.Contains(a, "v0.34.2") || !strings.Contains(a, "CGO_ENABLED=0") {
		t.Errorf("stamp %q must name the module, the staging version and cgo", a)
	}
	if a == k.Stamp("go1.2") {
		t.Error("the stamp does not change with the Go version")
	}
}

func TestKubeletIsPinned(t *testing.T) {
	if !strings.HasPrefix(KubernetesVersion, "v1.") || KubeletTool.Version != KubernetesVersion {
		t.Errorf("kubelet pinned at %q / %q", KubernetesVersion, KubeletTool.Version)
	}
}
