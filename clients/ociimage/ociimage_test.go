package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readTar returns the regular files, symlinks and folders of an archive.
func readTar(t *testing.T, data []byte) (files map[string][]byte, links map[string]string, dirs []string) {
	t.Helper()
	files, links = map[string][]byte{}, map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			files[h.Name] = b
		case tar.TypeSymlink:
			links[h.Name] = h.Linkname
		case tar.TypeDir:
			dirs = append(dirs, h.Name)
		}
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestLayoutIsConsistent(t *testing.T) {
	bb := []byte("\x7fELF not really busybox")
	l, err := Build(Image{Name: "localhost/x/busybox:1", Busybox: bb, Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := l.WriteTar(&buf); err != nil {
		t.Fatal(err)
	}
	files, _, _ := readTar(t, buf.Bytes())
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var idx Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(idx.Manifests))
	}
	md := idx.Manifests[0]
	if diff := cmp.Diff(map[string]string{AnnotationRefName: "1", AnnotationImageName: "localhost/x/busybox:1"}, md.Annotations); diff != "" {
		t.Errorf("index annotations (-want +got):\n%s", diff)
	}
	blob := func(d Descriptor) []byte {
		t.Helper()
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok {
			t.Fatalf("blob %s missing", d.Digest)
		}
		if sha(b) != d.Digest || int64(len(b)) != d.Size {
			t.Fatalf("blob %s: digest %s size %d, descriptor says %s %d", d.MediaType, sha(b), len(b), d.Digest, d.Size)
		}
		return b
	}
	var man Manifest
	if err := json.Unmarshal(blob(md), &man); err != nil {
		t.Fatal(err)
	}
	if man.MediaType != MediaTypeManifest || man.SchemaVersion != 2 || len(man.Layers) != 1 {
		t.Fatalf("manifest %+v", man)
	}
	var cfg Config
	if err := json.Unmarshal(blob(man.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	layer := blob(man.Layers[0])
	// Uncompressed layer: its diff ID is its digest.
	if diff := cmp.Diff([]string{sha(layer)}, cfg.RootFS.DiffIDs); diff != "" {
		t.Errorf("diff_ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(DefaultCmd, cfg.Config.Cmd); diff != "" {
		t.Errorf("Cmd (-want +got):\n%s", diff)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	lf, links, dirs := readTar(t, layer)
	if !bytes.Equal(lf["bin/busybox"], bb) {
		t.Errorf("bin/busybox is not the busybox given")
	}
	for _, a := range Applets {
		if links["bin/"+a] != "busybox" {
			t.Errorf("bin/%s -> %q, want busybox", a, links["bin/"+a])
		}
	}
	for _, d := range []string{"proc/", "sys/", "dev/", "tmp/", "etc/"} {
		if !slices.Contains(dirs, d) {
			t.Errorf("layer lacks %s (runc and runsc mount there)", d)
		}
	}
}

func TestReproducible(t *testing.T) {
	a, err := Build(Image{Name: "n:1", Busybox: []byte("bb")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(Image{Name: "n:1", Busybox: []byte("bb")})
	if a.Index.Manifests[0].Digest != b.Index.Manifests[0].Digest {
		t.Errorf("same input, different manifest digests")
	}
	c, _ := Build(Image{Name: "n:1", Busybox: []byte("bb2")})
	if a.Index.Manifests[0].Digest == c.Index.Manifests[0].Digest {
		t.Errorf("different busybox, same manifest digest")
	}
}

func TestTagFromName(t *testing.T) {
	for _, tc := range []struct{ name, tag string }{
		{"localhost/a/b:7", "7"},
		{"localhost:5000/a/b", "latest"},
		{"b", "latest"},
	} {
		l, err := Build(Image{Name: tc.name, Busybox: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Index.Manifests[0].Annotations[AnnotationRefName]; got != tc.tag {
			t.Errorf("%s: tag %q, want %q", tc.name, got, tc.tag)
		}
	}
}

func TestRefusals(t *testing.T) {
	if _, err := Build(Image{Busybox: []byte("x")}); err == nil {
		t.Error("an image without a name was built")
	}
	if _, err := Build(Image{Name: "n"}); err == nil {
		t.Error("an image without busybox was built")
	}
	if _, err := Layer([]byte("x"), []string{"../evil"}); err == nil {
		t.Error("an applet name with a slash was accepted")
	}
	// A script is not an ELF executable, let alone a static one.
	p := filepath.Join(t.TempDir(), "busybox")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	if _, err := ReadBusybox(p); err == nil {
		t.Error("a shell script passed as a static busybox")
	}
}

// elfWith is a minimal 64-bit ELF executable whose one program header is of
// type pt: PT_INTERP names a dynamic loader, as a dynamic busybox has.
func elfWith(t *testing.T, pt elf.ProgType) string {
	t.Helper()
	var b bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&b, binary.LittleEndian, h)
	binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(pt), Flags: uint32(elf.PF_R)})
	p := filepath.Join(t.TempDir(), "busybox")
	if err := os.WriteFile(p, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadBusybox(t *testing.T) {
	static := elfWith(t, elf.PT_LOAD)
	want, _ := os.ReadFile(static)
	if got, err := ReadBusybox(static); err != nil || !bytes.Equal(got, want) {
		t.Errorf("a static ELF executable: %v, %d bytes read of %d", err, len(got), len(want))
	}
	if _, err := ReadBusybox(elfWith(t, elf.PT_INTERP)); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("an ELF executable with a loader (PT_INTERP): %v, want dynamically linked", err)
	}
}
