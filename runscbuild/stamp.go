package runscbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/runsc-cgroups/cgconform/base/report"
)

// StampFormat identifies the stamp Ensure and EnsureShim write next to a
// binary (bin/runsc-<flavor>.stamp): its build, for the matrix report, and
// its other inputs, so that unchanged ones skip the build.
const StampFormat = "runscbuild/stamp/v2"

// Stamp is the content of a binary's .stamp file, as JSON.
type Stamp struct {
	Format string `json:"format"`
	report.Build
	Go  string `json:"go"`  // the Go toolchain that built it
	CGO string `json:"cgo"` // always CGO_ENABLED=0 (runsc re-executes itself in a chroot)
}

// BuildOf is the build of m with patches: each patch file's sha256, and
// one digest of their names and contents (runsc --version's +cgpatches).
func BuildOf(m Module, patches []Patch) (report.Build, error) {
	b := report.Build{GVisor: m.Version}
	if len(patches) == 0 {
		return b, nil
	}
	h := sha256.New()
	for _, p := range patches {
		data, err := os.ReadFile(p.Path)
		if err != nil {
			return b, fmt.Errorf("hashing %s: %w", p.Name, err)
		}
		sum := sha256.Sum256(data)
		b.Patches = append(b.Patches, report.PatchFile{Name: p.Name, SHA256: hex.EncodeToString(sum[:])})
		fmt.Fprintf(h, "%s\x00%d\x00", p.Name, len(data))
		h.Write(data)
	}
	b.Digest = hex.EncodeToString(h.Sum(nil))[:12]
	return b, nil
}

// stampFor is the stamp a binary of build b gets from this toolchain.
func stampFor(b report.Build) Stamp {
	return Stamp{Format: StampFormat, Build: b, Go: runtime.Version(), CGO: "CGO_ENABLED=0"}
}

// upToDate tells whether the stamp at stampPath says bin, as it is, was
// built from want.
func upToDate(bin, stampPath string, want Stamp) bool {
	have, err := ReadStamp(stampPath)
	if err != nil || have.Binary == "" {
		return false
	}
	if !have.SameSource(want.Build) || have.Go != want.Go || have.CGO != want.CGO || have.Digest != want.Digest {
		return false
	}
	sum, err := FileSHA256(bin)
	return err == nil && sum == have.Binary
}

// writeStamp records that bin was built from s.
func writeStamp(bin, stampPath string, s Stamp) error {
	sum, err := FileSHA256(bin)
	if err != nil {
		return err
	}
	s.Binary = sum
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(stampPath, append(data, '\n'), 0o644)
}

// ReadStamp reads a stamp; one of an older format is an error saying to
// rebuild.
func ReadStamp(path string) (Stamp, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Stamp{}, err
	}
	var s Stamp
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || s.Format != StampFormat {
		return Stamp{}, fmt.Errorf("%s is not a %s stamp (written by an older build-runsc): rebuild the binary (make runsc, make runsc-prs)", path, StampFormat)
	}
	return s, nil
}

// FileSHA256 is the hex sha256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
