package runscbuild

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type tarEntry struct {
	Name string
	Mode int64
	Data string
}

func readTarball(t *testing.T, path string) []tarEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{h.Name, h.Mode, string(data)})
	}
}

// TestDistSameBytes checks that a release holds its files with their modes
// and a SHA256SUMS of them, and that writing it again, later and from
// files with other times, gives the same bytes.
func TestDistSameBytes(t *testing.T) {
	src := t.TempDir()
	files := []DistFile{{"runsc", filepath.Join(src, "a"), 0o755}, {"BUILD.json", filepath.Join(src, "b"), 0o644}}
	write := func(mtime time.Time) {
		for i, data := range []string{"binary", "{}\n"} {
			if err := os.WriteFile(files[i].Path, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(files[i].Path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	var tarballs [2][]byte
	var sums [2][]byte
	for i, mtime := range []time.Time{time.Unix(1e9, 0), time.Now()} {
		write(mtime)
		dir := t.TempDir()
		tarball, err := Dist(dir, "r-v1", files)
		if err != nil {
			t.Fatal(err)
		}
		if tarballs[i], err = os.ReadFile(tarball); err != nil {
			t.Fatal(err)
		}
		if sums[i], err = os.ReadFile(filepath.Join(dir, "SHA256SUMS")); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s  r-v1.tar.gz\n", sha(string(tarballs[i]))); string(sums[i]) != want {
			t.Errorf("SHA256SUMS = %q, want %q", sums[i], want)
		}
		want := []tarEntry{
			{"r-v1/", 0o755, ""},
			{"r-v1/runsc", 0o755, "binary"},
			{"r-v1/BUILD.json", 0o644, "{}\n"},
			{"r-v1/SHA256SUMS", 0o644, fmt.Sprintf("%s  runsc\n%s  BUILD.json\n", sha("binary"), sha("{}\n"))},
		}
		if diff := cmp.Diff(want, readTarball(t, tarball)); diff != "" {
			t.Errorf("tarball (-want +got):\n%s", diff)
		}
	}
	if string(tarballs[0]) != string(tarballs[1]) || string(sums[0]) != string(sums[1]) {
		t.Errorf("two releases of the same files differ")
	}
}
