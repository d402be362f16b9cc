package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// TestPayloadBuilds: each runtime run from the payload records the build
// its stamp names, only when the staged binary is the one stamped; a
// runtime without a stamp of ours records none and says so.
func TestPayloadBuilds(t *testing.T) {
	pr := report.Build{GVisor: "v1", Digest: "abc", Patches: []report.PatchFile{{Name: "04-busy/0001-x.patch", SHA256: "11"}}}
	stock := report.Build{GVisor: "v1"}
	write := func(t *testing.T, dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stamp := func(t *testing.T, dir, name string, b report.Build, binary string) {
		t.Helper()
		sum := sha256Hex(t, binary)
		b.Binary = sum
		data, err := json.Marshal(runscbuild.Stamp{Format: runscbuild.StampFormat, Build: b, Go: "go1", CGO: "CGO_ENABLED=0"})
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, name+".stamp", string(data))
	}
	withSum := func(b report.Build, binary string) report.Build {
		b.Binary = sha256Hex(t, binary)
		return b
	}
	const runtimes = "runsc-stock=/payload/bin/runsc-stock,runsc-pr-04-busy=/payload/bin/runsc-pr-04-busy,runc,runsc-old=/payload/bin/runsc-old"
	for _, tc := range []struct {
		name    string
		staged  string // the staged runsc-pr-04-busy
		want    map[string]report.Build
		notes   []string
		wantErr string
	}{
		{
			name:   "stamped",
			staged: "pr binary",
			want:   map[string]report.Build{"runsc-stock": withSum(stock, "stock binary"), "runsc-pr-04-busy": withSum(pr, "pr binary")},
			notes:  []string{"runsc-old: no build recorded"},
		},
		{name: "replaced after its build", staged: "another binary", wantErr: "runsc-pr-04-busy: the staged runsc-pr-04-busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, staged := t.TempDir(), t.TempDir()
			stamp(t, bin, "runsc-stock", stock, "stock binary")
			stamp(t, bin, "runsc-pr-04-busy", pr, "pr binary")
			write(t, bin, "runsc-old.stamp", "v1\n931d7a7750d1\ngo1\nCGO_ENABLED=0\nstamp-v1\n")
			write(t, staged, "runsc-stock", "stock binary")
			write(t, staged, "runsc-pr-04-busy", tc.staged)
			write(t, staged, "runsc-old", "old binary")
			got, notes, err := payloadBuilds(runtimes, bin, staged)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("builds (-want +got):\n%s", diff)
			}
			if len(notes) != len(tc.notes) {
				t.Fatalf("notes %q, want %d", notes, len(tc.notes))
			}
			for i, n := range tc.notes {
				if !strings.Contains(notes[i], n) {
					t.Errorf("note %q does not say %q", notes[i], n)
				}
			}
		})
	}
}

func sha256Hex(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := runscbuild.FileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
