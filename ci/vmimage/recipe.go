// Package vmimage builds the host images of the QEMU matrix from Debian
// packages alone: a Debian cloud kernel, a busybox initramfs for the v1,
// hybrid and v2 modes, a debootstrap'd systemd disk for the systemd modes,
// and a small payload disk with the binaries under test.
//
// Base images are cached under a folder named by a hash of their inputs
// (recipe text, package versions, binaries copied in). The payload lives on a
// separate disk, so rebuilding runsc or editing a case never forces a
// debootstrap.
package vmimage

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

//go:embed files/*
var files embed.FS

// recipeVersion changes whenever a build step changes in a way the hashed
// inputs do not show.
const recipeVersion = "cgm-images-1"

// Base names a cached base image.
type Base string

// The two kinds of base image.
const (
	BaseBusybox Base = "busybox" // initramfs, busybox /init mounts the cgroups
	BaseSystemd Base = "systemd" // ext4 disk, systemd is PID 1
)

// Mode is one real host of the matrix.
type Mode struct {
	Name    string
	Base    Base
	Cmdline []string // kernel arguments beyond the common ones
	About   string
}

// Modes lists every host mode, in the order the matrix runs them.
var Modes = []Mode{
	{Name: "v1", Base: BaseBusybox, Cmdline: []string{"cgm.mode=v1"},
		About: "cgroup v1 only: each controller mounted under a tmpfs at /sys/fs/cgroup"},
	{Name: "hybrid", Base: BaseBusybox, Cmdline: []string{"cgm.mode=hybrid"},
		About: "v1 controllers plus an empty cgroup2 at /sys/fs/cgroup/unified"},
	{Name: "v2", Base: BaseBusybox, Cmdline: []string{"cgm.mode=v2"},
		About: "cgroup2 only at /sys/fs/cgroup, every controller enabled in the root subtree_control"},
	{Name: "systemd-v2", Base: BaseSystemd,
		Cmdline: []string{"cgm.mode=systemd-v2", "systemd.unified_cgroup_hierarchy=1"},
		About:   "Debian 12, systemd 252 as PID 1, unified hierarchy"},
	// systemd 252 still honours unified_cgroup_hierarchy=0 (v1 support was
	// deprecated in 256); without legacy_systemd_cgroup_controller it also
	// mounts cgroup2 at /sys/fs/cgroup/unified, the layout of this build host.
	{Name: "systemd-v1", Base: BaseSystemd,
		Cmdline: []string{"cgm.mode=systemd-v1", "systemd.unified_cgroup_hierarchy=0"},
		About:   "Debian 12, systemd 252 as PID 1, legacy v1 hierarchies (systemd's hybrid layout)"},
}

// ModeByName finds a mode; the error lists the valid names.
func ModeByName(name string) (Mode, error) {
	var names []string
	for _, m := range Modes {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Mode{}, fmt.Errorf("unknown mode %q: pick from %s", name, strings.Join(names, ", "))
}

// ParseModes turns "v1,v2" or "v1 v2" or "all" (or "") into modes, keeping
// the matrix order and dropping duplicates.
func ParseModes(list string) ([]Mode, error) {
	fields := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(fields) == 0 || (len(fields) == 1 && fields[0] == "all") {
		return slices.Clone(Modes), nil
	}
	for _, f := range fields {
		if _, err := ModeByName(f); err != nil {
			return nil, err
		}
	}
	return slices.DeleteFunc(slices.Clone(Modes), func(m Mode) bool { return !slices.Contains(fields, m.Name) }), nil
}

// Recipe is the set of named inputs an image is built from. Its hash names
// the cache entry, so any change of an input builds a new image.
type Recipe struct {
	Name   string
	inputs map[string][]byte
}

// NewRecipe starts an empty recipe for the image called name.
func NewRecipe(name string) *Recipe {
	return &Recipe{Name: name, inputs: map[string][]byte{}}
}

// Add records an input; adding the same key twice keeps the last value.
func (r *Recipe) Add(key string, value []byte) {
	r.inputs[key] = append([]byte(nil), value...)
}

// AddString records a textual input.
func (r *Recipe) AddString(key, value string) { r.Add(key, []byte(value)) }

// Keys lists the recorded inputs, sorted.
func (r *Recipe) Keys() []string { return slices.Sorted(maps.Keys(r.inputs)) }

// Hash is a short hex digest over the recipe name, version and inputs, in
// key order, each length-prefixed so no two input sets collide by
// concatenation.
func (r *Recipe) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", recipeVersion, r.Name)
	for _, k := range r.Keys() {
		v := r.inputs[k]
		fmt.Fprintf(h, "%d:%s\x00%d:", len(k), k, len(v))
		h.Write(v)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Manifest is the human-readable list of inputs stored next to an image:
// textual ones verbatim when short, the others by digest.
func (r *Recipe) Manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "image %s\nrecipe %s\nhash %s\n", r.Name, recipeVersion, r.Hash())
	for _, k := range r.Keys() {
		v := r.inputs[k]
		if len(v) <= 100 && utf8.Valid(v) && !strings.ContainsAny(string(v), "\n\x00") {
			fmt.Fprintf(&b, "%s = %s\n", k, v)
			continue
		}
		sum := sha256.Sum256(v)
		fmt.Fprintf(&b, "%s sha256:%s bytes:%d\n", k, hex.EncodeToString(sum[:8]), len(v))
	}
	return b.String()
}

func mustFile(name string) []byte {
	b, err := files.ReadFile("files/" + name)
	if err != nil {
		panic(fmt.Sprintf("embedded file %s missing: %v", name, err))
	}
	return b
}
