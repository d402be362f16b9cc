// Package ociimage writes a one-layer OCI image layout, as a tar archive,
// from a static busybox: the local image the clients import with
// `ctr images import`, so no registry is ever needed. Its default command
// runs until it is sent SIGTERM or SIGKILL, so the same image serves as the
// CRI plugin's sandbox (pause) image and as a pod's container.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Media types of the OCI image spec (v1.1).
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"

	// AnnotationRefName is the OCI tag of a manifest in index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationImageName is the full name `ctr images import` gives the
	// image.
	AnnotationImageName = "io.containerd.image.name"
)

// DefaultCmd runs until it is stopped: sh is PID 1 and traps TERM and INT
// (PID 1 ignores signals without a handler), sleep is its child.
var DefaultCmd = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; sleep 1000000000 & wait"}

// Applets are the busybox links the image gets in /bin beside busybox.
var Applets = []string{"cat", "echo", "env", "false", "id", "ls", "ps", "sh", "sleep", "true"}

// epoch makes the archive reproducible: the same busybox gives the same
// digests.
var epoch = time.Unix(0, 0).UTC()

// Image describes the image to write.
type Image struct {
	// Name is the reference ctr gives the image, e.g.
	// "localhost/cgclients/busybox:1".
	Name string
	// Busybox is the static busybox binary's content.
	Busybox []byte
	Arch    string // runtime.GOARCH when empty
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Index is an OCI image index (index.json).
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Config is the part of an OCI image config the image sets.
type Config struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		Env        []string `json:"Env"`
		Cmd        []string `json:"Cmd"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// Layout is the image as blobs, before it is archived.
type Layout struct {
	Index    Index
	Manifest Manifest
	Config   Config
	// Blobs maps "sha256:<hex>" to content: the layer, config and manifest.
	Blobs map[string][]byte
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Layer returns the uncompressed layer tar: the folders a container
// runtime expects, /bin/busybox and its applet links.
func Layer(busybox []byte, applets []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(h *tar.Header) error {
		h.ModTime, h.Uname, h.Gname, h.Format = epoch, "root", "root", tar.FormatPAX
		return tw.WriteHeader(h)
	}
	for _, d := range []string{"bin/", "dev/", "etc/", "proc/", "root/", "sys/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := hdr(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"bin/busybox", 0o755, busybox},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	for _, f := range files {
		if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	names := append([]string(nil), applets...)
	sort.Strings(names)
	for _, a := range names {
		if a == "" || a == "busybox" || strings.Contains(a, "/") {
			return nil, fmt.Errorf("applet name %q: want a plain name other than busybox", a)
		}
		if err := hdr(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Build lays the image out: layer, config, manifest and index.
func Build(img Image) (*Layout, error) {
	if img.Name == "" {
		return nil, fmt.Errorf("the image needs a name")
	}
	if len(img.Busybox) == 0 {
		return nil, fmt.Errorf("no busybox binary given")
	}
	layer, err := Layer(img.Busybox, Applets)
	if err != nil {
		return nil, err
	}
	l := &Layout{Blobs: map[string][]byte{}}
	l.Config.Architecture = img.Arch
	if l.Config.Architecture == "" {
		l.Config.Architecture = runtime.GOARCH
	}
	l.Config.OS = "linux"
	l.Config.Config.Env = []string{"PATH=/bin"}
	l.Config.Config.Cmd = DefaultCmd
	l.Config.Config.WorkingDir = "/"
	l.Config.RootFS.Type = "layers"
	l.Config.RootFS.DiffIDs = []string{digest(layer)}
	cfg, err := json.Marshal(l.Config)
	if err != nil {
		return nil, err
	}
	l.Manifest = Manifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeManifest,
		Config:        Descriptor{MediaType: MediaTypeConfig, Digest: digest(cfg), Size: int64(len(cfg))},
		Layers:        []Descriptor{{MediaType: MediaTypeLayer, Digest: digest(layer), Size: int64(len(layer))}},
	}
	man, err := json.Marshal(l.Manifest)
	if err != nil {
		return nil, err
	}
	tag := img.Name
	if i := strings.LastIndex(tag, ":"); i > strings.LastIndex(tag, "/") {
		tag = tag[i+1:]
	} else {
		tag = "latest"
	}
	l.Index = Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{{
		MediaType: MediaTypeManifest, Digest: digest(man), Size: int64(len(man)),
		Annotations: map[string]string{AnnotationRefName: tag, AnnotationImageName: img.Name},
	}}}
	for _, b := range [][]byte{layer, cfg, man} {
		l.Blobs[digest(b)] = b
	}
	return l, nil
}

// WriteTar archives the layout: oci-layout, index.json and
// blobs/sha256/<hex>, in a fixed order.
func (l *Layout) WriteTar(w io.Writer) error {
	idx, err := json.Marshal(l.Index)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", idx); err != nil {
		return err
	}
	keys := make([]string, 0, len(l.Blobs))
	for k := range l.Blobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := put(path.Join("blobs/sha256", strings.TrimPrefix(k, "sha256:")), l.Blobs[k]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// ReadBusybox reads the busybox at path, which must be a statically linked
// ELF executable: a dynamic busybox would find no libc in the image
// (Debian: apt-get install busybox-static).
func ReadBusybox(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is dynamically linked: the image needs a static busybox (apt-get install busybox-static)", path)
		}
	}
	return os.ReadFile(path)
}

// WriteFile builds the image from the busybox at busyboxPath and writes
// its layout tar to dst.
func WriteFile(dst, name, busyboxPath string) (*Layout, error) {
	bb, err := ReadBusybox(busyboxPath)
	if err != nil {
		return nil, err
	}
	l, err := Build(Image{Name: name, Busybox: bb})
	if err != nil {
		return nil, err
	}
	f, err := os.Create(dst)
	if err != nil {
		return nil, err
	}
	if err := l.WriteTar(f); err != nil {
		f.Close()
		return nil, err
	}
	return l, f.Close()
}
