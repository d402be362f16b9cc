// Package mode is the one vocabulary of host modes, end to end.
//
// Two ideas, two types:
//
//   - Cgroup is the cgroup layout the harness detects on a host and what
//     cases match in when.modes and divergences.modes: cgroup-v1, hybrid,
//     cgroup-v2.
//   - Host is a host of the QEMU matrix (v1, hybrid, v2, systemd-v2,
//     systemd-v1): a layout plus whether systemd is PID 1. Every Host maps
//     to exactly one Cgroup; systemd-v1 (systemd's legacy layout, cgroup2 at
//     /sys/fs/cgroup/unified beside the v1 controllers) is a hybrid host to
//     the harness.
//
// A result carries both: the Host label it ran under (when the matrix gave
// one) and the Cgroup the harness detected.
package mode

import (
	"fmt"
	"slices"
	"strings"
)

// Cgroup is a host's cgroup layout as the harness detects it.
type Cgroup string

// The cgroup layouts.
const (
	// V1: only v1 controller hierarchies.
	V1 Cgroup = "cgroup-v1"
	// Hybrid: v1 controllers plus a cgroup2 hierarchy (usually empty, at
	// /sys/fs/cgroup/unified).
	Hybrid Cgroup = "hybrid"
	// V2: the unified hierarchy only.
	V2 Cgroup = "cgroup-v2"
)

// Cgroups lists every layout, in matrix order.
var Cgroups = []Cgroup{V1, Hybrid, V2}

// HasV1Controllers reports whether the layout has v1 controller
// hierarchies (runtimes place sandboxes there, not in cgroup2).
func (c Cgroup) HasV1Controllers() bool { return c == V1 || c == Hybrid }

// ParseCgroup checks a layout name.
func ParseCgroup(s string) (Cgroup, error) {
	if c := Cgroup(s); slices.Contains(Cgroups, c) {
		return c, nil
	}
	return "", fmt.Errorf("unknown cgroup mode %q (known: %s)", s, join(Cgroups))
}

// Host is one host of the matrix.
type Host string

// The matrix's hosts.
const (
	HostV1        Host = "v1"
	HostHybrid    Host = "hybrid"
	HostV2        Host = "v2"
	HostSystemdV2 Host = "systemd-v2"
	HostSystemdV1 Host = "systemd-v1"
)

// Hosts lists every matrix host, in the order the matrix runs them.
var Hosts = []Host{HostV1, HostHybrid, HostV2, HostSystemdV2, HostSystemdV1}

var hostCgroup = map[Host]Cgroup{
	HostV1:        V1,
	HostHybrid:    Hybrid,
	HostV2:        V2,
	HostSystemdV2: V2,
	HostSystemdV1: Hybrid,
}

// ParseHost checks a matrix host name.
func ParseHost(s string) (Host, error) {
	h := Host(s)
	if _, ok := hostCgroup[h]; ok {
		return h, nil
	}
	return "", fmt.Errorf("unknown matrix host %q (known: %s)", s, join(Hosts))
}

// Cgroup is the layout the harness detects on h.
func (h Host) Cgroup() Cgroup { return hostCgroup[h] }

func join[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}
