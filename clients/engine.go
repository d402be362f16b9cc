package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/clients/ociimage"
)

// Engines: Debian's Docker (docker.io 20.10: dockerd, its own containerd
// 1.6 and containerd's runc shim, which runs any OCI runtime as runc) and
// Podman 4.3 (daemonless: conmon runs the runtime), as users run runsc
// through them. Each is private to one Engine: its own sockets, exec root
// or runroot, storage (vfs: no overlay module in the VMs), no network (no
// bridge, no iptables), the local busybox image imported from a tar.
// Nothing of Debian's defaults (/var/lib/docker, /run/docker.sock,
// /var/lib/containers) is touched.

// Engine kinds.
const (
	Docker = "docker"
	Podman = "podman"
)

// EngineImage is the local image's name in an engine.
const EngineImage = "cgclients/busybox:1"

// EngineOptions configures a private engine.
type EngineOptions struct {
	Kind string
	// Systemd selects the systemd cgroup driver (Docker's
	// native.cgroupdriver=systemd, Podman's --cgroup-manager systemd).
	Systemd bool
	// Runtimes are the OCI runtimes by name: Docker's daemon.json runtimes
	// ("runc" stays Docker's own), Podman's --runtime path.
	Runtimes map[string]string
	// RunscArgs go to every runsc Docker runs (its debug log).
	RunscArgs []string
	Busybox   string
	// LogDir gets <Kind>.log: dockerd's output and every command's exit.
	LogDir string
	// Tree, when set: every engine process (dockerd and what it starts,
	// each podman command and its conmon) starts in Tree.Root + "/" + Kind.
	Tree     *cgroupfs.Tree
	StartCmd func(*exec.Cmd) (release func(), err error)
	Log      io.Writer
}

// Engine is a private Docker daemon or Podman store.
type Engine struct {
	Kind string
	// Base holds the sockets, exec root or runroot, and storage. Short, in
	// /run: unix socket paths below it must fit in 108 bytes.
	Base string
	PID  int // dockerd; 0 for Podman
	opts EngineOptions
	d    *daemon // dockerd
	log  *os.File
	// shimRun: Docker's containerd puts its shims' sockets in
	// /run/containerd/s too.
	shimRun shimRun
}

// Cgroup is where the engine's processes start ("" without a Tree).
func (e *Engine) Cgroup() string {
	if e.opts.Tree == nil {
		return ""
	}
	return e.opts.Tree.Root + "/" + e.Kind
}

// StartEngine makes the engine's folders, starts dockerd (Docker) and
// imports the local image.
func StartEngine(ctx context.Context, o EngineOptions) (e *Engine, err error) {
	if o.Kind != Docker && o.Kind != Podman {
		return nil, fmt.Errorf("unknown engine %q (docker or podman)", o.Kind)
	}
	bin := map[string]string{Docker: "dockerd", Podman: "podman"}[o.Kind]
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("%s is not installed (Debian's docker.io and podman; the matrix's VM images have them): %w", bin, err)
	}
	if o.StartCmd == nil {
		o.StartCmd = plainStart
	}
	if err := subreaper(); err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("/run", "cg"+o.Kind+"-")
	if err != nil {
		return nil, err
	}
	e = &Engine{Kind: o.Kind, Base: base, opts: o, shimRun: noteShimRun()}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if e.log, err = os.Create(filepath.Join(o.LogDir, o.Kind+".log")); err != nil {
		return e, err
	}
	if cg := e.Cgroup(); cg != "" {
		if err := o.Tree.Mkdir(cg); err != nil {
			return e, err
		}
	}
	if o.Kind == Docker {
		if err := e.startDockerd(ctx); err != nil {
			return e, err
		}
	}
	bb, err := ociimage.ReadBusybox(o.Busybox)
	if err != nil {
		return e, err
	}
	layer, err := ociimage.Layer(bb, ociimage.Applets)
	if err != nil {
		return e, err
	}
	cmd, _ := json.Marshal(ociimage.DefaultCmd)
	st := e.cli(ctx, 2*time.Minute, bytes.NewReader(layer), "import", "-c", "CMD "+string(cmd), "-", EngineImage)
	if !st.OK() {
		return e, fmt.Errorf("%s import: %s", o.Kind, Describe(st))
	}
	return e, nil
}

// env keeps Debian's programs ahead of the payload's: dockerd must start
// its own containerd 1.6 and shim, not the containerd 2.x of bin/.
func (e *Engine) env() []string {
	return environ([]string{"PATH=", "DOCKER_", "CONTAINERS_"}, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/debian/usr/sbin:/debian/usr/bin",
		"DOCKER_HOST=unix://"+filepath.Join(e.Base, "docker.sock"))
}

// command makes argv a command that first joins the engine's cgroup (on
// cgroup v1 there is no clone into a cgroup).
func (e *Engine) command(ctx context.Context, argv ...string) *exec.Cmd {
	script := joinScript(e.opts.Tree, e.Cgroup(), true)
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh"}, argv...)...)
	cmd.Env = e.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// DockerConfig is the daemon.json of a private dockerd: the runtimes (runc
// stays Docker's own: redefining it is refused), the driver, vfs, no
// network.
func DockerConfig(o EngineOptions) []byte {
	rts := map[string]any{}
	for name, path := range o.Runtimes {
		if name == "runc" {
			continue
		}
		rt := map[string]any{"path": path}
		if strings.Contains(filepath.Base(path), "runsc") && len(o.RunscArgs) > 0 {
			rt["runtimeArgs"] = o.RunscArgs
		}
		rts[name] = rt
	}
	driver := map[bool]string{true: "systemd", false: "cgroupfs"}[o.Systemd]
	b, _ := json.MarshalIndent(map[string]any{"runtimes": rts, "storage-driver": "vfs", "bridge": "none", "iptables": false,
		"ip-masq": false, "exec-opts": []string{"native.cgroupdriver=" + driver}}, "", "  ")
	return b
}

func (e *Engine) startDockerd(ctx context.Context) error {
	b := DockerConfig(e.opts)
	conf := filepath.Join(e.Base, "daemon.json")
	if err := os.WriteFile(conf, b, 0o644); err != nil {
		return err
	}
	cmd := e.command(context.Background(), "dockerd", "--config-file", conf, "--data-root", filepath.Join(e.Base, "data"),
		"--exec-root", filepath.Join(e.Base, "exec"), "-H", "unix://"+filepath.Join(e.Base, "docker.sock"),
		"--pidfile", filepath.Join(e.Base, "docker.pid"))
	var err error
	if e.d, err = startDaemon(cmd, e.log, e.opts.StartCmd); err != nil {
		return fmt.Errorf("starting dockerd: %w", err)
	}
	e.PID = cmd.Process.Pid
	return e.d.await(ctx, "dockerd", "answer", 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		st := e.cli(ctx, 20*time.Second, nil, "version")
		return st.OK(), "docker version: " + Describe(st)
	})
}

// RestartDaemon stops dockerd as its service manager does (SIGTERM: it
// stops its containers, as without live-restore) and starts it again.
func (e *Engine) RestartDaemon(ctx context.Context) Step {
	st := Step{Name: "restart dockerd", Argv: []string{"kill", "-TERM", fmt.Sprint(e.PID)}}
	start := time.Now()
	if e.Kind != Docker {
		st.Exit, st.Err = -1, "podman has no daemon"
		return st
	}
	err := e.stopDaemon()
	if err == nil {
		err = e.startDockerd(ctx)
	}
	if err != nil {
		st.Exit, st.Err = -1, err.Error()
	}
	st.Seconds = time.Since(start).Seconds()
	return st
}

// RuntimeRoot is the --root Docker's runc shim gives every runtime
// (podman: "", each runtime's own).
func (e *Engine) RuntimeRoot() string {
	if e.Kind != Docker {
		return ""
	}
	return filepath.Join(e.Base, "exec", "runtime-runc", "moby")
}

// CLI runs one docker or podman command against this engine.
func (e *Engine) CLI(ctx context.Context, limit time.Duration, args ...string) Step {
	return e.cli(ctx, limit, nil, args...)
}

func (e *Engine) cli(ctx context.Context, limit time.Duration, stdin io.Reader, args ...string) Step {
	argv := []string{e.Kind}
	if e.Kind == Podman {
		mgr := map[bool]string{true: "systemd", false: "cgroupfs"}[e.opts.Systemd]
		argv = append(argv, "--root", filepath.Join(e.Base, "storage"), "--runroot", filepath.Join(e.Base, "run"),
			"--tmpdir", filepath.Join(e.Base, "tmp"), "--storage-driver", "vfs", "--cgroup-manager", mgr, "--events-backend", "file")
	}
	argv = append(argv, args...)
	st := runStep(ctx, limit, e.Kind+" "+firstWords(args, 1), argv, stdin, func(cctx context.Context) *exec.Cmd { return e.command(cctx, argv...) }, e.opts.StartCmd)
	st.Output = strings.TrimSpace(st.Output)
	fmt.Fprintf(e.log, "%s: %s\n", strings.Join(argv, " "), Describe(st))
	return st
}

// RunArgs are the arguments of `run` for one container of runtime rt
// (Docker: a runtime name; Podman: its path), extra before the image.
func (e *Engine) RunArgs(rt string, extra ...string) []string {
	if e.Kind == Podman {
		if p := e.opts.Runtimes[rt]; p != "" {
			rt = p
		}
	}
	return append(append([]string{"run", "-d", "--network", "none", "--runtime", rt}, extra...), EngineImage)
}

// stopDaemon ends dockerd, if it runs, as its service manager does.
func (e *Engine) stopDaemon() error {
	if e.d == nil {
		return nil
	}
	_, err := e.d.stop(30 * time.Second)
	e.d = nil
	return err
}

// Stop removes what is left: every container (podman rm -f), dockerd
// (SIGTERM), any process below this one whose command line names Base
// (shims, conmon, runtimes: see ours), mounts below Base, Base. It
// returns what it could not undo.
func (e *Engine) Stop() []string {
	var errs []string
	ctx := context.Background()
	if e.Kind == Podman {
		if st := e.cli(ctx, 2*time.Minute, nil, "rm", "-a", "-f"); !st.OK() {
			errs = append(errs, "podman rm -a -f: "+Describe(st))
		}
	}
	if err := e.stopDaemon(); err != nil {
		errs = append(errs, "dockerd: "+err.Error())
	}
	killOurs(e.Base, nil)
	_, serrs := e.shimRun.clean()
	errs = append(errs, serrs...)
	if e.log != nil {
		e.log.Close()
	}
	_, rerrs := removeBase(e.Base)
	return append(errs, rerrs...)
}
