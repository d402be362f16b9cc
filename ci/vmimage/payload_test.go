package vmimage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestStageAndDisk(t *testing.T) {
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("needs mke2fs and debugfs (apt-get install e2fsprogs)")
	}
	src := t.TempDir()
	bin := filepath.Join(src, "runsc")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	cases := filepath.Join(src, "cases")
	os.MkdirAll(cases, 0o755)
	os.WriteFile(filepath.Join(cases, "a.yaml"), []byte("name: a\n"), 0o644)

	p := Payload{Bins: map[string]string{"runsc-patched": bin}, CasesDir: cases,
		Runtimes: "runsc-patched=/payload/bin/runsc-patched", HarnessArgs: "-run ^a",
		Command: "cgbench -out \"$CGM_OUT\"\n"}
	out := t.TempDir()
	st, err := p.Stage(filepath.Join(out, "stage"))
	if err != nil {
		t.Fatal(err)
	}
	// Later edits of the sources do not reach a staged run.
	os.WriteFile(filepath.Join(cases, "b.yaml"), []byte("name: b\n"), 0o644)
	img, err := st.Disk(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := exec.Command("debugfs", "-R", "ls -p /cases", img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs: %v\n%s", err, ls)
	}
	if !strings.Contains(string(ls), "a.yaml") || strings.Contains(string(ls), "b.yaml") {
		t.Errorf("payload /cases = %s, want a.yaml only", ls)
	}
	for inside, want := range map[string]string{"/runtimes": "runsc-patched=/payload/bin/runsc-patched", "/harness-args": "-run ^a", "/command": `cgbench -out "$CGM_OUT"`} {
		dest := filepath.Join(t.TempDir(), "f")
		if err := ExtractFromDisk(context.Background(), img, inside, dest); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dest); strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q, want %q", inside, got, want)
		}
	}
	for _, f := range []string{"/cgm-run", "/cgm-standin", "/bin/runsc-patched"} {
		if err := ExtractFromDisk(context.Background(), img, f, filepath.Join(t.TempDir(), "x")); err != nil {
			t.Errorf("payload lacks %s: %v", f, err)
		}
	}
	if err := ExtractFromDisk(context.Background(), img, "/out/out.tgz", filepath.Join(t.TempDir(), "x")); err == nil {
		t.Error("ExtractFromDisk found results on a fresh payload disk")
	}
}
