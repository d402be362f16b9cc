package vmimage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runsc-cgroups/cgconform/ci/vmrun"
	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// Payload is what each VM runs: the binaries under test and the cases. It is
// rebuilt for every run and never enters a base image's hash.
type Payload struct {
	Bins     map[string]string // name in the VM's /payload/bin -> host path
	CasesDir string            // copied to /payload/cases; may be empty
	Runtimes string            // -runtimes list for the harness, as the VM sees it
	// HarnessArgs are more harness flags, blank-separated (no quoting).
	HarnessArgs string
	// Command, when set, is a shell script cgm-run runs instead of the
	// harness (cgbench uses it), with the results folder in $CGM_OUT;
	// what it leaves there comes back like the harness's output.
	Command string
}

// Staged is a payload copied once into a folder, so every mode of a run
// boots the same bits even while bin/ or cases/ change underneath.
type Staged struct {
	Dir   string
	bytes int64
}

// Stage copies the payload into dir.
func (p Payload) Stage(dir string) (*Staged, error) {
	stage := dir
	if err := os.RemoveAll(stage); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(stage, "bin"), 0o755); err != nil {
		return nil, err
	}
	for name, src := range p.Bins {
		if err := runscbuild.CopyFile(src, filepath.Join(stage, "bin", name), 0o755); err != nil {
			return nil, fmt.Errorf("staging %s for the VM (build it first: make runsc cgconform): %w", src, err)
		}
	}
	for _, f := range []string{"cgm-run", "cgm-standin"} {
		if err := os.WriteFile(filepath.Join(stage, f), mustFile(f), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(stage, "runtimes"), []byte(p.Runtimes+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, "harness-args"), []byte(p.HarnessArgs+"\n"), 0o644); err != nil {
		return nil, err
	}
	if p.Command != "" {
		if err := os.WriteFile(filepath.Join(stage, "command"), []byte(p.Command), 0o755); err != nil {
			return nil, err
		}
	}
	if p.CasesDir != "" {
		if err := runscbuild.CopyTree(p.CasesDir, filepath.Join(stage, "cases")); err != nil {
			return nil, fmt.Errorf("staging the cases from %s: %w", p.CasesDir, err)
		}
	}
	// What the disk must hold beside its room for the results: the
	// binaries and the cases.
	var total int64
	err := filepath.WalkDir(stage, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasPrefix(path, stage+"/bin/") && !strings.HasPrefix(path, stage+"/cases/") {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return &Staged{Dir: stage, bytes: total}, err
}

// Disk turns the staged payload into the ext4 image dir/payload.ext4
// (mke2fs -d, no loop device), with room for the results the VM copies back
// onto it.
func (s *Staged) Disk(ctx context.Context, dir string) (string, error) {
	img := filepath.Join(dir, "payload.ext4")
	os.Remove(img)
	sizeMiB := s.bytes>>20 + 256
	if _, err := run(ctx, "", "mke2fs", "-q", "-F", "-t", "ext4", "-L", "cgm-payload", "-d", s.Dir, img, fmt.Sprintf("%dM", sizeMiB)); err != nil {
		return "", fmt.Errorf("making the payload disk: %w", err)
	}
	return img, nil
}

// ExtractFromDisk copies a file out of an ext4 image with debugfs, without
// mounting it: the fallback when the serial frame did not arrive.
func ExtractFromDisk(ctx context.Context, img, inside, dest string) error {
	os.Remove(dest)
	if _, err := run(ctx, "", "debugfs", "-R", fmt.Sprintf("dump %s %s", inside, dest), img); err != nil {
		return fmt.Errorf("reading %s from %s with debugfs: %w", inside, img, err)
	}
	st, err := os.Stat(dest)
	if err != nil || st.Size() == 0 {
		os.Remove(dest)
		return fmt.Errorf("%s is not on the payload disk %s: the VM did not get to copy its results", inside, img)
	}
	return nil
}

// Collect takes the results a VM sent: the framed archive on its second
// serial port (saved in serial), or failing that the copy cgm-run left on
// the payload disk, unpacked into names and contents.
func Collect(ctx context.Context, serial, disk string) (map[string][]byte, error) {
	f, err := os.Open(serial)
	var tgz []byte
	if err == nil {
		tgz, err = vmrun.DecodeFrame(f)
		f.Close()
	}
	if err != nil {
		dest := filepath.Join(filepath.Dir(disk), "out.tgz")
		if derr := ExtractFromDisk(ctx, disk, "/out/out.tgz", dest); derr != nil {
			return nil, errors.Join(fmt.Errorf("serial frame: %w", err), derr)
		}
		if tgz, err = os.ReadFile(dest); err != nil {
			return nil, err
		}
	}
	return vmrun.Untar(tgz)
}
