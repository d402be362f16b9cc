package runscbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/report"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestNeedsFlavor: what a pull request needs, alone, is stock with the
// patches of the pull requests it needs and not its own; one that needs
// nothing has no such build.
func TestNeedsFlavor(t *testing.T) {
	s := fourPRs(t)
	for _, tc := range []struct {
		pr      string
		ok      bool
		patches []string
	}{
		{pr: "01-levels"},
		{pr: "04-busy", ok: true, patches: []string{"01-levels/0001-a.patch", "01-levels/0002-b.patch"}},
		{pr: "03-nested", ok: true, patches: []string{"01-levels/0001-a.patch", "01-levels/0002-b.patch", "02-empty-path/0003-c.patch"}},
	} {
		t.Run(tc.pr, func(t *testing.T) {
			pr, _ := s.PR(tc.pr)
			f, ok := NeedsFlavor(s, pr)
			if ok != tc.ok {
				t.Fatalf("NeedsFlavor ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			var got []string
			for _, p := range f.Patches {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.patches, got); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
			if f.Name != "needs-"+tc.pr || NeedsRuntime(tc.pr) != "runsc-"+f.Name {
				t.Errorf("flavor %q, runtime %q: want needs-%s built as runsc-needs-%[3]s", f.Name, NeedsRuntime(tc.pr), tc.pr)
			}
		})
	}
}

// TestBuildOf: a build names each patch file by its sha256, in order, with
// the series hash runsc --version prints; stock has only the version.
func TestBuildOf(t *testing.T) {
	s := fourPRs(t)
	pr, _ := s.PR("04-busy")
	f := PRFlavor(s, pr)
	m := Module{Version: "v0.0.0-x"}
	got, err := BuildOf(m, f.Patches)
	if err != nil {
		t.Fatal(err)
	}
	// The digest is over each patch's name, length and content, in order.
	digest := sha("01-levels/0001-a.patch\x001\x00a" + "01-levels/0002-b.patch\x001\x00b" + "04-busy/0005-e.patch\x001\x00e")[:12]
	want := report.Build{GVisor: "v0.0.0-x", Digest: digest, Patches: []report.PatchFile{
		{Name: "01-levels/0001-a.patch", SHA256: sha("a")},
		{Name: "01-levels/0002-b.patch", SHA256: sha("b")},
		{Name: "04-busy/0005-e.patch", SHA256: sha("e")},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildOf (-want +got):\n%s", diff)
	}
	stock, err := BuildOf(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(report.Build{GVisor: "v0.0.0-x"}, stock); diff != "" {
		t.Errorf("stock build (-want +got):\n%s", diff)
	}
}

// TestStamp: a stamp round-trips the build and the binary's sha256; it
// says up to date only for the same build of the same binary bytes; an
// old-format stamp is refused with what to do.
func TestStamp(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "runsc-pr-04-busy")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := report.Build{GVisor: "v1", Digest: "d", Patches: []report.PatchFile{{Name: "04-busy/0005-e.patch", SHA256: sha("e")}}}
	st := bin + ".stamp"
	if err := writeStamp(bin, st, stampFor(b)); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStamp(st)
	if err != nil {
		t.Fatal(err)
	}
	want := stampFor(b)
	want.Binary = sha("binary")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadStamp (-want +got):\n%s", diff)
	}
	changed := b
	changed.Patches = []report.PatchFile{{Name: "04-busy/0005-e.patch", SHA256: sha("e2")}}
	for _, tc := range []struct {
		name   string
		build  report.Build
		binary string
		want   bool
	}{
		{name: "same", build: b, binary: "binary", want: true},
		{name: "patch changed", build: changed, binary: "binary"},
		{name: "binary replaced", build: b, binary: "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(bin, []byte(tc.binary), 0o755); err != nil {
				t.Fatal(err)
			}
			if got := upToDate(bin, st, stampFor(tc.build)); got != tc.want {
				t.Errorf("upToDate = %v, want %v", got, tc.want)
			}
		})
	}
	old := filepath.Join(dir, "old.stamp")
	if err := os.WriteFile(old, []byte("v0\n931d7a7750d1\ngo1.26.8\nCGO_ENABLED=0\nstamp-v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStamp(old); err == nil || !strings.Contains(err.Error(), "rebuild") {
		t.Errorf("ReadStamp of a stamp-v1 file: err = %v, want one saying to rebuild", err)
	}
}

// TestRuntimeFlavor: each runtime name the harness reports maps to the
// flavor that builds it, and no other name does.
func TestRuntimeFlavor(t *testing.T) {
	s := fourPRs(t)
	pr, _ := s.PR("04-busy")
	needs, _ := NeedsFlavor(s, pr)
	for _, tc := range []struct {
		runtime string
		want    Flavor
		ok      bool
	}{
		{runtime: "runsc-stock", want: Flavor{Name: "stock"}, ok: true},
		{runtime: "runsc-patched", want: Flavor{Name: "patched", Patches: s.Patches()}, ok: true},
		{runtime: "runsc-pr-04-busy", want: PRFlavor(s, pr), ok: true},
		{runtime: "runsc-needs-04-busy", want: needs, ok: true},
		{runtime: "runsc-needs-01-levels"},
		{runtime: "runsc-pr-09-absent"},
		{runtime: "runc"},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			got, ok := RuntimeFlavor(s, tc.runtime)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("flavor (-want +got):\n%s", diff)
			}
		})
	}
}
