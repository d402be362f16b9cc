// Package mounts finds and detaches the mounts below a folder of ours: the
// one mountinfo reader of the harness, the benchmarks and the image builder
// (github.com/moby/sys/mountinfo parses, unescapes and filters).
package mounts

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Under lists the mount points at or below dir in this process's mount
// namespace, deepest first.
func Under(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(abs))
	if err != nil {
		return nil, fmt.Errorf("reading /proc/self/mountinfo: %w", err)
	}
	return points(ms), nil
}

func points(ms []*mountinfo.Info) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Detach lazily unmounts (MNT_DETACH) every mount at or below dir, deepest
// first, and returns those it detached. dir must be a folder of ours (e.g.
// runsc's per-root null-netns bind mount lives in each --root folder).
func Detach(dir string) ([]string, error) {
	mps, err := Under(dir)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, mp := range mps {
		err := unix.Unmount(mp, unix.MNT_DETACH)
		switch {
		case err == nil:
			done = append(done, mp)
		case errors.Is(err, unix.EINVAL): // already gone with its parent
		default:
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return done, errors.Join(errs...)
}
