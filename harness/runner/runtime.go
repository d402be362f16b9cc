package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Runtime is one OCI runtime binary under test, for the harness and the
// benchmarks alike.
type Runtime struct {
	// Name is how cases and reports refer to it (runsc-patched, runc...).
	Name string `json:"name"`
	// Path is the binary.
	Path string `json:"path"`
	// Kind selects the command-line dialect: runsc, runc or crun.
	Kind string `json:"kind,omitempty"`
	// Cases, when set, limits the runtime to the "case [context]" names it
	// matches (-runtime-cases): a pull request's build runs only the cases
	// that prove it.
	Cases *regexp.Regexp `json:"-"`
	// Flags go before the subcommand on every call the benchmarks make
	// (--nested-cgroups …); cases use sandbox options instead.
	Flags []string `json:"flags,omitempty"`
}

// Label names the runtime with its extra flags, for tables.
func (r Runtime) Label() string {
	if len(r.Flags) == 0 {
		return r.Name
	}
	return r.Name + " " + strings.Join(r.Flags, " ")
}

// ParseRuntimes parses "name=path,name=path,name" (a bare name is looked
// up on PATH, or as bin/<name>).
func ParseRuntimes(spec string) ([]Runtime, error) {
	var out []Runtime
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, p, ok := strings.Cut(item, "=")
		if !ok {
			p = name
		}
		kind, err := KindOf(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Runtime{Name: name, Path: p, Kind: kind})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no runtimes in %q", spec)
	}
	return out, nil
}

// KindOf guesses the dialect from a runtime's name.
func KindOf(name string) (string, error) {
	base := filepath.Base(name)
	switch {
	case strings.Contains(base, "runsc"):
		return "runsc", nil
	case strings.Contains(base, "crun"):
		return "crun", nil
	case strings.Contains(base, "runc"):
		return "runc", nil
	}
	return "", fmt.Errorf("runtime %q: cannot tell whether it is runsc, runc or crun from its name; name it after its kind (e.g. runsc-mine=/path)", name)
}

// Candidate is the runtime under test: the one that must meet every
// expectation, and without which a run proves nothing.
const Candidate = "runsc-patched"

// DefaultRuntimes are used when -runtimes is not given.
func DefaultRuntimes() []Runtime {
	return []Runtime{
		{Name: Candidate, Path: "bin/runsc-patched", Kind: "runsc"},
		{Name: "runsc-stock", Path: "bin/runsc-stock", Kind: "runsc"},
		{Name: "runc", Path: "runc", Kind: "runc"},
		{Name: "crun", Path: "crun", Kind: "crun"},
	}
}

// Resolve finds the binary; an error says why the runtime cannot run.
func (r *Runtime) Resolve() error {
	if strings.Contains(r.Path, "/") {
		abs, err := filepath.Abs(r.Path)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%s not found at %s (build it, e.g. make runsc, or pass -runtimes %s=/path)", r.Name, abs, r.Name)
		}
		r.Path = abs
		return nil
	}
	p, err := exec.LookPath(r.Path)
	if err != nil {
		return fmt.Errorf("%s not installed (not on PATH)", r.Name)
	}
	r.Path = p
	return nil
}

// Version returns the first line of "<runtime> --version".
func (r *Runtime) Version(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, r.Path, "--version").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[:min(len(lines), 2)], "; ")
}

// GlobalFlags are the flags before the subcommand. runsc writes its log
// (warnings included, which it otherwise discards) into the folder logs.
func (r *Runtime) GlobalFlags(root, logs string, options []string) (flags []string, notes []string) {
	flags = []string{"--root", root}
	if r.Kind == "runsc" {
		// No network stack setup: cgroups are what is under test.
		flags = append(flags, "--network=none", "--debug-log="+logs+"/")
	}
	for _, o := range options {
		if f, ok := optionFlags[o][r.Kind]; ok {
			flags = append(flags, f)
		} else if optionFlags[o] != nil {
			notes = append(notes, fmt.Sprintf("%s has no --%s; ran %s", r.Kind, o, optionDefaults[o]))
		}
	}
	return flags, notes
}

// optionFlags are the flags of each sandbox option, by runtime kind; a kind
// that has none runs as optionDefaults says.
var optionFlags = map[string]map[string]string{
	"systemd-cgroup": {"runsc": "--systemd-cgroup", "runc": "--systemd-cgroup", "crun": "--cgroup-manager=systemd"},
	"nested-cgroups": {"runsc": "--nested-cgroups"},
	"ignore-cgroups": {"runsc": "--ignore-cgroups", "crun": "--cgroup-manager=disabled"},
}

var optionDefaults = map[string]string{"nested-cgroups": "with its default placement", "ignore-cgroups": "managing cgroups"}

// Command returns argv (without the binary) for action on id. args are
// exec's command, or update's one resources file.
func (r *Runtime) Command(global []string, action, id, bundle string, args []string, signal string) []string {
	c := append([]string(nil), global...)
	switch action {
	case "create":
		c = append(c, "create", "--bundle", bundle, id)
	case "start", "state", "pause", "resume", "delete":
		// The same subcommand in runsc, runc and crun.
		c = append(c, action, id)
	case "list":
		c = append(c, "list")
	case "exec":
		c = append(append(c, "exec", id), args...)
	case "kill":
		if signal == "" {
			signal = "KILL"
		}
		c = append(c, "kill", id, signal)
	case "delete-force":
		c = append(c, "delete", "--force", id)
	case "update":
		// runsc, runc and crun all read a linux.resources JSON file.
		c = append(c, "update", "--resources", args[0], id)
	default:
		panic("unknown runtime action " + action)
	}
	return c
}

// StateRole is the role of the PID "state" reports: the sandbox process
// for runsc, the container's init for runc and crun.
func (r *Runtime) StateRole() string {
	if r.Kind == "runsc" {
		return "sandbox"
	}
	return "init"
}

// KnownRefusal returns why the runtime refuses this host mode outright,
// given the output of a first failing create, or "".
func KnownRefusal(kind, output string) string {
	if kind == "crun" && strings.Contains(output, "cgroups in hybrid mode not supported") {
		return "crun refuses hybrid hosts: \"cgroups in hybrid mode not supported\" (crun 1.8.1); covered by the v1 and v2 VM runs"
	}
	return ""
}
