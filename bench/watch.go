package bench

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
)

// Watch finds the cgroups a runtime left behind: new directories in the
// test tree, and /<name> at a hierarchy's root for the unique names a run
// used (stock runsc puts an empty cgroupsPath at "/"+ID, outside the tree).
// A nil *Watch sees nothing (the unit tests).
type Watch struct {
	Tree *cgroupfs.Tree
	// Self is the caller's PID: the leaf a nested runtime moves it into is
	// where the caller lives now, not a leak.
	Self int
}

// Snapshot lists every directory of the tree, in every hierarchy.
func (w *Watch) Snapshot() map[string]bool {
	if w == nil {
		return nil
	}
	out := map[string]bool{}
	for _, h := range w.Tree.Host.Hierarchies {
		for _, d := range cgroupfs.Dirs(h, w.Tree.Root) {
			out[h.Dir(d)] = true
		}
	}
	return out
}

// Top lists where <hierarchy>/<name> exists.
func (w *Watch) Top(name string) []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, h := range w.Tree.Host.Hierarchies {
		if _, err := os.Stat(h.Dir(name)); err == nil {
			out = append(out, h.Dir(name))
		}
	}
	return out
}

// Leaked lists the tree's directories that are not in before (except the
// caller's own leaf) and every <hierarchy>/<name> for names, then removes
// them, killing what is still inside: they were made for this run, under
// names it made up, and hold only its sandboxes.
func (w *Watch) Leaked(before map[string]bool, names ...string) []string {
	if w == nil {
		return nil
	}
	var leaked []string
	for d := range w.Snapshot() {
		if before[d] {
			continue
		}
		if pids, _ := cgroupfs.ReadProcs(d); slices.Contains(pids, w.Self) {
			continue
		}
		leaked = append(leaked, d)
	}
	// Deepest first, so that parents go after their children.
	sort.Slice(leaked, func(i, j int) bool { return len(leaked[i]) > len(leaked[j]) })
	for _, d := range leaked {
		_ = cgroupfs.Kill(d)
		cgroupfs.RemoveTree(d, 2*time.Second)
	}
	for _, n := range names {
		for _, h := range w.Tree.Host.Hierarchies {
			top := h.Dir(n)
			if _, err := os.Stat(top); err != nil {
				continue
			}
			for _, d := range cgroupfs.Dirs(h, "/"+n) {
				leaked = append(leaked, filepath.Join(h.Mount, d))
				_ = cgroupfs.Kill(h.Dir(d))
			}
			cgroupfs.RemoveTree(top, 5*time.Second)
		}
	}
	return leaked
}
