package runscbuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DistFile is one file of a release: its name in the tarball, where it is
// now, and its mode.
type DistFile struct {
	Name, Path string
	Mode       int64
}

// Dist writes dir/NAME.tar.gz (files in NAME/ with their SHA256SUMS) and
// dir/SHA256SUMS naming it, and returns its path. No owner, one fixed time
// and a gzip header without name or time: the same files, the same bytes.
func Dist(dir, name string, files []DistFile) (string, error) {
	var sums bytes.Buffer
	for _, f := range files {
		sum, err := FileSHA256(f.Path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&sums, "%s  %s\n", sum, f.Name)
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(zw)
	epoch := time.Unix(0, 0)
	add := func(name string, mode int64, data []byte) error {
		h := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
		return "", err
	}
	for _, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			return "", err
		}
		if err := add(name+"/"+f.Name, f.Mode, data); err != nil {
			return "", err
		}
	}
	if err := add(name+"/SHA256SUMS", 0o644, sums.Bytes()); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tarball := filepath.Join(dir, name+".tar.gz")
	if err := os.WriteFile(tarball, out.Bytes(), 0o644); err != nil {
		return "", err
	}
	sum, err := FileSHA256(tarball)
	if err != nil {
		return "", err
	}
	return tarball, os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(fmt.Sprintf("%s  %s\n", sum, filepath.Base(tarball))), 0o644)
}
