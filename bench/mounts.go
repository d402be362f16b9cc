package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
	"golang.org/x/sys/unix"
)

// MountsUnder lists the mount points strictly below dir in a mountinfo
// stream, deepest first. runsc --network=none bind-mounts a "null-netns"
// into every --root it uses and never unmounts it, so each root of ours
// leaves one behind.
func MountsUnder(mountinfo io.Reader, dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := cgroupfs.Unescape(f[4])
		if strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// UnmountUnder detaches every mount below dir (ours: made by the runtimes
// we ran with roots inside dir) and returns what it unmounted.
func UnmountUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mps, err := MountsUnder(f, dir)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, mp := range mps {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return mps, errors.Join(errs...)
}
