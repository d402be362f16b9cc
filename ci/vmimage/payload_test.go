package vmimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runsc-cgroups/cgconform/ci/vmrun"
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

func resultsArchive(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	body := `{"schema":"cgconform/report/v1","results":[]}`
	tw.WriteHeader(&tar.Header{Name: "./report.json", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
	tw.Write([]byte(body))
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// payloadDisk makes an ext4 image holding files, as the VM leaves it.
func payloadDisk(t *testing.T, files map[string][]byte) string {
	t.Helper()
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("needs mke2fs and debugfs (apt-get install e2fsprogs)")
	}
	dir := t.TempDir()
	stage := filepath.Join(dir, "stage")
	for name, data := range files {
		p := filepath.Join(stage, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(stage, 0o755)
	img := filepath.Join(dir, "payload.ext4")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-d", stage, img, "8M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	return img
}

func TestCollect(t *testing.T) {
	archive := resultsArchive(t)
	var framed bytes.Buffer
	vmrun.EncodeFrame(&framed, archive)
	for _, tc := range []struct {
		name    string
		serial  string
		disk    map[string][]byte
		wantErr string
	}{
		{name: "serial frame", serial: framed.String(), disk: map[string][]byte{}},
		{name: "disk fallback", serial: "power down\n", disk: map[string][]byte{"out/out.tgz": archive}},
		{name: "neither", serial: "Kernel panic\n", disk: map[string][]byte{}, wantErr: "the VM did not get to copy its results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := payloadDisk(t, tc.disk)
			serial := filepath.Join(t.TempDir(), "serial-report.txt")
			os.WriteFile(serial, []byte(tc.serial), 0o644)
			files, err := Collect(context.Background(), serial, img)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Collect error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(files["report.json"]), "cgconform/report/v1") {
				t.Errorf("Collect = %v, want report.json", files)
			}
		})
	}
}
