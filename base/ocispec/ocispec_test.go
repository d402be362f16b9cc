package ocispec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestMerge(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name     string
		fragment string
		check    func(*specs.Spec) any
		want     any
	}{
		{
			name:     "objects merge, base keys survive",
			fragment: `{"linux": {"cgroupsPath": "a/b"}}`,
			check:    func(s *specs.Spec) any { return []any{s.Linux.CgroupsPath, len(s.Linux.Namespaces)} },
			want:     []any{"a/b", 5},
		},
		{
			name:     "arrays replace",
			fragment: `{"process": {"args": ["/bin/true"]}}`,
			check:    func(s *specs.Spec) any { return []any{s.Process.Args, s.Process.Cwd} },
			want:     []any{[]string{"/bin/true"}, "/"},
		},
		{
			name:     "null deletes",
			fragment: `{"linux": {"namespaces": null}}`,
			check:    func(s *specs.Spec) any { return len(s.Linux.Namespaces) },
			want:     0,
		},
		{
			name:     "resources decode into runtime-spec types",
			fragment: `{"linux": {"resources": {"memory": {"limit": 268435456}, "pids": {"limit": -1}}}}`,
			check:    func(s *specs.Spec) any { return []any{s.Linux.Resources.Memory.Limit, s.Linux.Resources.Pids.Limit} },
			want:     []any{i64(268435456), int64(-1)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Merge(Base("/rootfs"), json.RawMessage(tc.fragment))
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if diff := cmp.Diff(tc.want, tc.check(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeLeavesBaseAlone(t *testing.T) {
	base := Base("/rootfs")
	if _, err := Merge(base, json.RawMessage(`{"hostname": "other"}`)); err != nil {
		t.Fatal(err)
	}
	if base.Hostname != "cgconform" {
		t.Errorf("base modified: hostname %q", base.Hostname)
	}
}

func TestMergeRejectsNonObject(t *testing.T) {
	if _, err := Merge(Base("/r"), json.RawMessage(`[1]`)); err == nil {
		t.Fatal("Merge of an array fragment succeeded")
	}
}

func TestBuildRootfsAndBundle(t *testing.T) {
	dir := t.TempDir()
	bb := filepath.Join(dir, "busybox")
	if err := os.WriteFile(bb, []byte("#!fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	if err := BuildRootfs(rootfs, bb); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(rootfs, "bin", "sleep")); err != nil || l != "busybox" {
		t.Errorf("bin/sleep -> %q, %v", l, err)
	}
	if err := WriteBundle(filepath.Join(dir, "b"), Base(rootfs)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "b", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s specs.Spec
	if err := json.Unmarshal(b, &s); err != nil || s.Root.Path != rootfs {
		t.Errorf("config.json root %v, err %v", s.Root, err)
	}
	if err := BuildRootfs(filepath.Join(dir, "r2"), filepath.Join(dir, "missing")); err == nil {
		t.Error("BuildRootfs with a missing busybox succeeded")
	}
}

func TestMergeRefusesUnknownFields(t *testing.T) {
	_, err := Merge(Base("/r"), json.RawMessage(`{"linux": {"cgroupPath": "typo"}}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "cgroupPath"`) {
		t.Errorf("Merge = %v, want an unknown-field error", err)
	}
}
