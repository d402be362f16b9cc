// Package clients starts and stops a private containerd (its own root,
// state, sockets and config, with the CRI plugin) and drives real clients
// against it: crictl as the kubelet drives CRI (a pod with a kubelet-style
// cgroup_parent and a container in it), and ctr (two namespaces, one
// container ID, an empty cgroupsPath, a failed create). Every run reports
// the processes it saw and the cgroups they were in, what each client
// command returned, and what was left once everything was torn down, so a
// harness can check placement and leaks. Everything it starts it stops (by
// PID), and every folder, mount and cgroup it made it removes.
package clients

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Runtime handler names, as CRI's runtime_handler and the report call them.
const (
	HandlerRunsc      = "runsc"       // gVisor's shim with the patched runsc
	HandlerRunscStock = "runsc-stock" // gVisor's shim with stock runsc
	HandlerRunc       = "runc"        // containerd's runc shim, the reference
)

// Handlers lists every handler in report order.
var Handlers = []string{HandlerRunsc, HandlerRunscStock, HandlerRunc}

// ImageName is the local busybox image (ociimage), imported with ctr; the
// CRI plugin uses it as its sandbox (pause) image too.
const ImageName = "localhost/cgclients/busybox:1"

// CRINamespace is the containerd namespace the CRI plugin works in.
const CRINamespace = "k8s.io"

// Handler is one runtime handler of the private containerd.
type Handler struct {
	Name string
	// Shim is the shim binary's absolute path (CRI runtime_path, ctr
	// --runtime).
	Shim string
	// Runsc is the runsc binary the runsc shim runs (binary_name); empty
	// for the runc handler.
	Runsc string
	// Runc is the runc binary of the runc handler.
	Runc string
	// CgroupWritable (cgroup v2 only) has containerd mount cgroup2
	// read-write in the handler's non-privileged containers, which get a
	// cgroup namespace of their own: the container's cgroup is delegated
	// to it (containerd's cgroup_writable).
	CgroupWritable bool
	// LogDir is runsc's debug log folder (default <base>/logs/<name>/).
	LogDir string
}

// IsRunsc reports whether h runs through gVisor's shim.
func (h Handler) IsRunsc() bool { return h.Runsc != "" }

// Layout is where a private containerd keeps everything; every path is
// below Base.
type Layout struct {
	Base string
}

// Paths below the base folder.
func (l Layout) Root() string        { return l.Base + "/root" }
func (l Layout) State() string       { return l.Base + "/state" }
func (l Layout) Socket() string      { return l.Base + "/containerd.sock" }
func (l Layout) TTRPCSocket() string { return l.Base + "/containerd.sock.ttrpc" }
func (l Layout) Config() string      { return l.Base + "/config.toml" }
func (l Layout) Log() string         { return l.Base + "/containerd.log" }
func (l Layout) Image() string       { return l.Base + "/busybox-oci.tar" }
func (l Layout) Logs() string        { return l.Base + "/logs" }
func (l Layout) RuncRoot() string    { return l.Base + "/runc-root" }
func (l Layout) Pods() string        { return l.Base + "/pods" }
func (l Layout) Opt() string         { return l.Base + "/opt" }
func (l Layout) FIFOs() string       { return l.Base + "/fifo" }
func (l Layout) RunscRoot(h string) string {
	return l.Base + "/runsc-root/" + h
}

// RunscConfigPath is the shim's TOML (runtime options ConfigPath) of a
// runsc handler.
func (l Layout) RunscConfigPath(h string) string { return l.Base + "/" + h + ".toml" }

// DaemonConfig is what RenderConfig writes.
type DaemonConfig struct {
	Layout   Layout
	Handlers []Handler
	// SystemdCgroup selects the systemd cgroup driver: the runc handler's
	// SystemdCgroup option, runsc's --systemd-cgroup, and (through the runc
	// options) the driver the CRI plugin reports to the kubelet.
	SystemdCgroup bool
	// Debug turns on containerd's debug log.
	Debug bool
	// Snapshotter is the CRI plugin's snapshotter ("overlayfs" when empty).
	Snapshotter string
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string { return strconv.Quote(s) }

// RenderConfig is the containerd 2.x configuration (version 3): private
// root, state and sockets, no TCP, NRI and CDI off, the snapshotters that
// need cgo or special filesystems disabled, the CRI plugin with the local
// image pinned as the sandbox image and one runtime per handler.
func RenderConfig(c DaemonConfig) string {
	l := c.Layout
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Written by clients.RenderConfig: a private containerd for the cgroup tests.")
	w("version = 3")
	w("root = %s", tomlString(l.Root()))
	w("state = %s", tomlString(l.State()))
	w("disabled_plugins = [%s]", strings.Join(quoteAll(disabledPlugins), ", "))
	w("")
	w("[grpc]")
	w("  address = %s", tomlString(l.Socket()))
	w("[ttrpc]")
	w("  address = %s", tomlString(l.TTRPCSocket()))
	w("[debug]")
	w("  address = \"\"")
	if c.Debug {
		w("  level = \"debug\"")
	}
	w("[metrics]")
	w("  address = \"\"")
	w("")
	w("[plugins.\"io.containerd.internal.v1.opt\"]")
	w("  path = %s", tomlString(l.Opt()))
	w("[plugins.\"io.containerd.grpc.v1.cri\"]")
	w("  disable_tcp_service = true")
	w("  stream_server_address = \"127.0.0.1\"")
	w("  stream_server_port = \"0\"")
	w("[plugins.\"io.containerd.cri.v1.images\"]")
	snap := c.Snapshotter
	if snap == "" {
		snap = "overlayfs"
	}
	w("  snapshotter = %s", tomlString(snap))
	w("  [plugins.\"io.containerd.cri.v1.images\".pinned_images]")
	w("    sandbox = %s", tomlString(ImageName))
	w("[plugins.\"io.containerd.cri.v1.runtime\"]")
	w("  enable_cdi = false")
	w("  cdi_spec_dirs = []")
	// The kubelet asks for oom_score_adj -998 for a sandbox; a host (or the
	// container this runs in) without CAP_SYS_RESOURCE refuses a value below
	// containerd's own, and runc's init dies on it.
	w("  restrict_oom_score_adj = true")
	w("  [plugins.\"io.containerd.cri.v1.runtime\".cni]")
	w("    bin_dirs = [%s]", tomlString(l.Base+"/cni/bin"))
	w("    conf_dir = %s", tomlString(l.Base+"/cni/conf"))
	w("  [plugins.\"io.containerd.cri.v1.runtime\".containerd]")
	w("    default_runtime_name = %s", tomlString(HandlerRunc))
	hs := append([]Handler(nil), c.Handlers...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].Name < hs[j].Name })
	for _, h := range hs {
		p := "    [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes." + tomlString(h.Name) + "]"
		w("%s", p)
		if h.IsRunsc() {
			w("      runtime_type = \"io.containerd.runsc.v1\"")
		} else {
			w("      runtime_type = \"io.containerd.runc.v2\"")
		}
		w("      runtime_path = %s", tomlString(h.Shim))
		if h.CgroupWritable {
			w("      cgroup_writable = true")
		}
		w("      %s.options]", strings.TrimSuffix(strings.TrimSpace(p), "]"))
		if h.IsRunsc() {
			w("        TypeUrl = \"io.containerd.runsc.v1.options\"")
			w("        ConfigPath = %s", tomlString(l.RunscConfigPath(h.Name)))
		} else {
			w("        BinaryName = %s", tomlString(h.Runc))
			w("        Root = %s", tomlString(l.RuncRoot()))
			w("        SystemdCgroup = %t", c.SystemdCgroup)
		}
	}
	// ctr images import unpacks through the transfer service, which only
	// knows the default snapshotter unless told.
	w("[plugins.\"io.containerd.transfer.v1.local\"]")
	w("  [[plugins.\"io.containerd.transfer.v1.local\".unpack_config]]")
	w("    platform = %s", tomlString("linux/"+runtime.GOARCH))
	w("    snapshotter = %s", tomlString(snap))
	w("[plugins.\"io.containerd.nri.v1.nri\"]")
	w("  disable = true")
	return b.String()
}

// disabledPlugins need cgo, kernel modules or filesystems a test host lacks,
// or would listen beyond the private folder.
var disabledPlugins = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.erofs",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.internal.v1.tracing",
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = tomlString(s)
	}
	return out
}

// RunscConfig is the runsc shim's options file (runtime options
// ConfigPath): which runsc, its root, and the runsc flags.
type RunscConfig struct {
	Binary, Root, DebugLog string
	SystemdCgroup          bool
	// Debug is runsc --debug: every command logs at debug level (with
	// DebugLog, into its own file there).
	Debug bool
}

// RenderRunscConfig writes the shim's TOML. runsc runs with --network=none:
// a pod on the host network would otherwise hand runsc the host's network
// namespace, whose addresses --network=sandbox takes over.
func RenderRunscConfig(c RunscConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by clients.RenderRunscConfig.\nbinary_name = %s\nroot = %s\n\n[runsc_config]\n", tomlString(c.Binary), tomlString(c.Root))
	flags := map[string]string{"network": "none"}
	if c.DebugLog != "" {
		flags["debug-log"] = c.DebugLog
	}
	if c.SystemdCgroup {
		flags["systemd-cgroup"] = "true"
	}
	if c.Debug {
		flags["debug"] = "true"
	}
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		fmt.Fprintf(&b, "  %s = %s\n", tomlString(k), tomlString(flags[k]))
	}
	return b.String()
}
