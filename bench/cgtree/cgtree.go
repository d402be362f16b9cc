// Package cgtree makes, joins and removes the benchmark's own cgroup tree.
//
// Safety rule on a shared host: it only creates, writes into or removes
// directories below <hierarchy mount>/<Tree.Name>, a name it made up and
// that did not exist before; it only kills processes found inside that tree,
// which descend from the process it placed there.
package cgtree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

// Tree is <mount>/<Name> in each of Hierarchies, with the caller's leaf
// <Name>/caller.
type Tree struct {
	Name        string               `json:"name"`
	Hierarchies []cgroupfs.Hierarchy `json:"hierarchies"`
	// V2Controllers lists the controllers enabled for the tree's children
	// on cgroup v2.
	V2Controllers []string `json:"v2Controllers,omitempty"`
}

// CallerDir is the leaf the caller process joins, relative to the tree.
const CallerDir = "caller"

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Where a runtime looks: every v1 hierarchy, named ones such as
// name=systemd included (runsc places sandboxes there too, so the caller
// must be in our tree there as well), or the unified one on a pure v2 host.
// On a hybrid host runsc works on v1 only, so the unified hierarchy is left
// alone.
func treeHierarchies(hs []cgroupfs.Hierarchy) []cgroupfs.Hierarchy {
	var out []cgroupfs.Hierarchy
	v2 := cgroupfs.ModeFor(hs) == cgroupfs.ModeV2
	for _, h := range hs {
		if h.V2 == v2 {
			out = append(out, h)
		}
	}
	return out
}

// Create makes the tree and its caller leaf in every hierarchy a runtime
// uses. The name must not exist yet in any of them: a tree we did not make is
// never ours to touch. On error, what was made is removed again.
func Create(name string, hs []cgroupfs.Hierarchy) (*Tree, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("cgroup tree name %q: use letters, digits, '.', '_' and '-' only", name)
	}
	t := &Tree{Name: name, Hierarchies: treeHierarchies(hs)}
	if len(t.Hierarchies) == 0 {
		return nil, errors.New("no cgroup hierarchy mounted: mount cgroupfs (v1) or cgroup2 at /sys/fs/cgroup")
	}
	var made []cgroupfs.Hierarchy
	fail := func(err error) (*Tree, error) {
		(&Tree{Name: name, Hierarchies: made}).Remove(false)
		return nil, err
	}
	for _, h := range t.Hierarchies {
		top := filepath.Join(h.Mount, name)
		if err := os.Mkdir(top, 0o755); err != nil {
			return fail(fmt.Errorf("creating the test cgroup %s (a leftover of an earlier run? remove it by hand once its processes are gone): %w", top, err))
		}
		made = append(made, h)
		cpuset := slices.Contains(h.Controllers(), "cpuset")
		if cpuset {
			if err := cgroupfs.CopyCpuset(h.Mount, top); err != nil {
				return fail(err)
			}
		}
		if h.V2 {
			t.V2Controllers = cgroupfs.EnableControllers(top)
		}
		leaf := filepath.Join(top, CallerDir)
		if err := os.Mkdir(leaf, 0o755); err != nil {
			return fail(fmt.Errorf("creating the caller cgroup %s: %w", leaf, err))
		}
		if cpuset {
			if err := cgroupfs.CopyCpuset(top, leaf); err != nil {
				return fail(err)
			}
		}
	}
	return t, nil
}

// EnableRootControllers enables every controller of a v2 hierarchy's root
// for its children. That changes the host for everyone: only for a
// throw-away VM whose init left the root's subtree_control empty.
func EnableRootControllers(h cgroupfs.Hierarchy) []string {
	if !h.V2 {
		return nil
	}
	return cgroupfs.EnableControllers(h.Mount)
}

// Dir is the directory of rel ("caller", "caller/x") inside the tree in h.
func (t *Tree) Dir(h cgroupfs.Hierarchy, rel string) string {
	return filepath.Join(h.Mount, t.Name, filepath.Clean("/"+rel))
}

// CallerProcs lists the cgroup.procs files of the caller leaf.
func (t *Tree) CallerProcs() []string {
	var out []string
	for _, h := range t.Hierarchies {
		out = append(out, filepath.Join(t.Dir(h, CallerDir), "cgroup.procs"))
	}
	return out
}

// Join moves pid into each cgroup.procs file. Each must belong to a tree
// made by this package (checked by name: under a cgroup mount, below a
// directory holding a "caller" leaf).
func Join(procsFiles []string, pid int) error {
	hs, err := cgroupfs.Mounted()
	if err != nil {
		return err
	}
	for _, f := range procsFiles {
		if err := checkJoinable(f, hs); err != nil {
			return err
		}
	}
	for _, f := range procsFiles {
		if err := os.WriteFile(f, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving pid %d into %s: %w", pid, f, err)
		}
	}
	return nil
}

func checkJoinable(f string, hs []cgroupfs.Hierarchy) error {
	clean := filepath.Clean(f)
	if clean != f || filepath.Base(f) != "cgroup.procs" {
		return fmt.Errorf("%q is not a clean path to a cgroup.procs file", f)
	}
	for _, h := range hs {
		rel, err := filepath.Rel(h.Mount, filepath.Dir(f))
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) >= 2 && validName.MatchString(parts[0]) && parts[1] == CallerDir {
			return nil
		}
	}
	return fmt.Errorf("%s is not inside a cgbench test tree (<cgroup mount>/<name>/%s/…): refusing to move a process there", f, CallerDir)
}

// Procs lists the PIDs anywhere in the tree.
func (t *Tree) Procs() ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, h := range t.Hierarchies {
		dirs, err := t.dirs(h)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			pids, err := cgroupfs.ReadProcs(d)
			if err != nil {
				continue // removed meanwhile
			}
			for _, p := range pids {
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// Subdirs lists the cgroups below the tree's top in h, relative to it,
// deepest first.
func (t *Tree) Subdirs(h cgroupfs.Hierarchy) ([]string, error) {
	dirs, err := t.dirs(h)
	if err != nil {
		return nil, err
	}
	top := filepath.Join(h.Mount, t.Name)
	var out []string
	for _, d := range dirs {
		if d == top {
			continue
		}
		rel, _ := filepath.Rel(top, d)
		out = append(out, rel)
	}
	return out, nil
}

// dirs lists the tree's directories in h, deepest first; none if the tree
// does not exist there.
func (t *Tree) dirs(h cgroupfs.Hierarchy) ([]string, error) {
	top := filepath.Join(h.Mount, t.Name)
	var out []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := strings.Count(out[i], "/"), strings.Count(out[j], "/")
		if di != dj {
			return di > dj
		}
		return out[i] < out[j]
	})
	return out, nil
}

// Remove removes the whole tree, deepest first, retrying a busy directory
// for a few seconds. With kill, it first SIGKILLs every process left inside
// the tree (they descend from the caller we placed there). It returns what
// could not be removed.
func (t *Tree) Remove(kill bool) error {
	if kill {
		pids, _ := t.Procs()
		for _, p := range pids {
			if p != os.Getpid() {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
	var errs []error
	for _, h := range t.Hierarchies {
		for _, left := range cgroupfs.RemoveTree(filepath.Join(h.Mount, t.Name), 5*time.Second) {
			errs = append(errs, errors.New("removing "+left))
		}
	}
	if len(errs) > 0 {
		pids, _ := t.Procs()
		errs = append(errs, fmt.Errorf("pids still inside %s: %v", t.Name, pids))
	}
	return errors.Join(errs...)
}

// Exists reports in which hierarchies <mount>/<name> exists.
func Exists(hs []cgroupfs.Hierarchy, name string) []string {
	var out []string
	for _, h := range hs {
		p := filepath.Join(h.Mount, name)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
