package clients

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mounts"
	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/clients/ociimage"
)

// ShimSocketDir is where containerd's shim library puts every shim's socket,
// whatever containerd's own state folder (defaults.DefaultStateDir + "/s").
const ShimSocketDir = "/run/containerd/s"

// Options configures a private containerd.
type Options struct {
	Bins *build.Binaries
	// Runc is the runc binary of the runc handler ("" looks up runc in PATH).
	Runc string
	// Busybox is the static busybox the local image is made from.
	Busybox string
	// BaseParent is the folder the private base folder is made in ("" for
	// the system's temp folder).
	BaseParent    string
	SystemdCgroup bool
	// Tree, when set, is the test cgroup tree: containerd (and so the shims
	// it starts) runs in Tree.Root + "/containerd" in every hierarchy, and
	// everything below Tree.Root is checked for leaks. Nil leaves
	// containerd in the caller's cgroup (a VM's payload unit).
	Tree  *cgroupfs.Tree
	Debug bool
	// RunscDebug runs every runsc command with --debug (full debug logs in
	// each handler's LogDir).
	RunscDebug bool
	// Handlers, when set, are the runtime handlers instead of the default
	// three (DefaultHandlers); a runc handler named HandlerRunc, the CRI
	// plugin's default, is added when missing.
	Handlers []Handler
	// StartCmd, when set, starts every process the clients run
	// (containerd, ctr, crictl, busctl, systemctl) and returns a function
	// to call once its Wait has returned: a caller that reaps orphans (a
	// child subreaper) registers them so it never takes their exit status.
	StartCmd func(*exec.Cmd) (release func(), err error)
	Log      io.Writer
}

// plainStart is the StartCmd of a caller that reaps nothing itself.
func plainStart(cmd *exec.Cmd) (func(), error) { return func() {}, cmd.Start() }

// DefaultHandlers are the three handlers of Bins: runsc (patched shim and
// runsc), runsc-stock, and runc through containerd's runc shim.
func DefaultHandlers(b *build.Binaries, runc string) []Handler {
	return []Handler{
		{Name: HandlerRunsc, Shim: b.RunscShim["patched"], Runsc: b.Runsc["patched"]},
		{Name: HandlerRunscStock, Shim: b.RunscShim["stock"], Runsc: b.Runsc["stock"]},
		{Name: HandlerRunc, Shim: b.RuncShim, Runc: runc},
	}
}

// Containerd is a running private containerd.
type Containerd struct {
	Layout   Layout
	Handlers map[string]Handler
	// handlers are the Handlers as configured.
	handlers []Handler
	// Snapshotter is overlayfs where the kernel has it, else native (a
	// VM kernel without the overlay module).
	Snapshotter string
	PID         int
	Host        *cgroupfs.Host
	opts        Options
	d           *daemon
	logFile     *os.File
	// shimRun notes what of /run/containerd existed before, so Stop
	// removes only what this containerd's shims made.
	shimRun shimRun
	// madeEtc lists the files Start wrote in /etc because there were none
	// (a busybox VM): the CRI plugin copies hosts and resolv.conf into
	// every pod.
	madeEtc []string
}

func (c *Containerd) logf(format string, args ...any) {
	if c.opts.Log != nil {
		fmt.Fprintf(c.opts.Log, "clients: "+format+"\n", args...)
	}
}

// Start writes the configuration, starts containerd in its cgroup, waits
// until both its API and the CRI plugin answer, and imports the local image
// into the CRI namespace. On failure everything it made is undone.
func Start(ctx context.Context, o Options) (c *Containerd, err error) {
	if o.Bins == nil {
		return nil, errors.New("clients.Start: no binaries (build.Find or build.All)")
	}
	if o.Runc == "" {
		if o.Runc, err = exec.LookPath("runc"); err != nil {
			return nil, fmt.Errorf("runc is not installed (apt-get install runc): %w", err)
		}
	}
	if o.StartCmd == nil {
		o.StartCmd = plainStart
	}
	if err := subreaper(); err != nil {
		return nil, err
	}
	host, err := cgroupfs.Detect()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp(o.BaseParent, "cgclients-")
	if err != nil {
		return nil, err
	}
	c = &Containerd{Layout: Layout{Base: base}, Host: host, opts: o}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	hs := o.Handlers
	if len(hs) == 0 {
		hs = DefaultHandlers(o.Bins, o.Runc)
	}
	if !slices.ContainsFunc(hs, func(h Handler) bool { return h.Name == HandlerRunc }) {
		hs = append(slices.Clip(hs), Handler{Name: HandlerRunc, Shim: o.Bins.RuncShim, Runc: o.Runc})
	}
	c.Handlers, c.handlers = map[string]Handler{}, hs
	for _, h := range hs {
		if _, dup := c.Handlers[h.Name]; dup || h.Name == "" {
			return c, fmt.Errorf("handler %q named twice (or unnamed)", h.Name)
		}
		c.Handlers[h.Name] = h
	}
	if err := c.prepare(); err != nil {
		return c, err
	}
	if err := c.startDaemon(ctx); err != nil {
		return c, err
	}
	if st := c.ImportImage(ctx, CRINamespace); !st.OK() {
		return c, fmt.Errorf("importing the image: exit %d %s %s", st.Exit, st.Err, st.Output)
	}
	return c, nil
}

func (c *Containerd) prepare() error {
	l := c.Layout
	for _, d := range []string{l.Root(), l.State(), l.Logs(), l.RuncRoot(), l.Pods(), l.Opt(), l.FIFOs()} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
	}
	for _, h := range c.handlers {
		if !h.IsRunsc() {
			continue
		}
		logs := h.LogDir
		if logs == "" {
			logs = filepath.Join(l.Logs(), h.Name)
		}
		logs = strings.TrimSuffix(logs, "/") + "/"
		if err := os.MkdirAll(logs, 0o755); err != nil {
			return err
		}
		cfg := RenderRunscConfig(RunscConfig{Binary: h.Runsc, Root: l.RunscRoot(h.Name), DebugLog: logs, SystemdCgroup: c.opts.SystemdCgroup, Debug: c.opts.RunscDebug})
		if err := os.WriteFile(l.RunscConfigPath(h.Name), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	c.Snapshotter = "native"
	if fs, err := os.ReadFile("/proc/filesystems"); err == nil && HasOverlay(string(fs)) {
		c.Snapshotter = "overlayfs"
	}
	cfg := RenderConfig(DaemonConfig{Layout: l, Handlers: c.handlers, SystemdCgroup: c.opts.SystemdCgroup, Debug: c.opts.Debug, Snapshotter: c.Snapshotter})
	if err := os.WriteFile(l.Config(), []byte(cfg), 0o644); err != nil {
		return err
	}
	if _, err := ociimage.WriteFile(l.Image(), ImageName, c.opts.Busybox); err != nil {
		return fmt.Errorf("writing the local image: %w", err)
	}
	c.shimRun = noteShimRun()
	for _, f := range []struct{ path, data string }{
		{"/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n"},
		{"/etc/resolv.conf", "# written by cgclients: pods use the host network, no DNS\n"},
	} {
		if _, err := os.Stat(f.path); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
				return fmt.Errorf("this host has no %s and the CRI plugin needs one: %w", f.path, err)
			}
			c.madeEtc = append(c.madeEtc, f.path)
			c.logf("wrote %s (there was none); Stop removes it", f.path)
		}
	}
	return nil
}

// env is the environment of containerd and the clients: the shims are found
// by path, runc by PATH.
func (c *Containerd) env() []string {
	return environ([]string{"PATH=", "CONTAINERD_"}, "PATH="+filepath.Dir(c.opts.Bins.Containerd)+":"+filepath.Dir(c.opts.Runc)+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
}

// environ is this process's environment without the variables whose
// "NAME=" starts with one of drop, and with add.
func environ(drop []string, add ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		return slices.ContainsFunc(drop, func(p string) bool { return strings.HasPrefix(e, p) })
	})
	return append(env, add...)
}

// DaemonCgroup is the cgroup containerd runs in below the test tree.
func (c *Containerd) DaemonCgroup() string {
	if c.opts.Tree == nil {
		return ""
	}
	return c.opts.Tree.Root + "/containerd"
}

func (c *Containerd) startDaemon(ctx context.Context) error {
	args := []string{c.opts.Bins.Containerd, "--config", c.Layout.Config()}
	// A shell joins the cgroup, then becomes containerd: on cgroup v1 there
	// is no clone into a cgroup.
	if cg := c.DaemonCgroup(); cg != "" {
		if err := c.opts.Tree.Mkdir(cg); err != nil {
			return err
		}
	}
	script := joinScript(c.opts.Tree, c.DaemonCgroup(), false)
	var err error
	if c.logFile, err = os.Create(c.Layout.Log()); err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Env = c.env()
	if c.d, err = startDaemon(cmd, c.logFile, c.opts.StartCmd); err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	c.PID = cmd.Process.Pid
	c.logf("containerd pid %d, base %s, cgroup %q", c.PID, c.Layout.Base, c.DaemonCgroup())
	return c.d.await(ctx, "containerd", "answer", time.Minute, 200*time.Millisecond, func() (bool, string) {
		if _, err := os.Stat(c.Layout.Socket()); err != nil {
			return false, "no socket yet"
		}
		st := c.Crictl(ctx, 10*time.Second, "info")
		return st.Exit == 0, "crictl info: " + st.Err + " " + st.Output
	})
}

// daemon is a long-running process a client started (containerd, dockerd,
// the kubelet), its output in its log.
type daemon struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it is reaped
	log    string
}

// startDaemon starts cmd (in its own process group: a terminal's ^C
// reaches us, and we stop it) through start, its output into log.
func startDaemon(cmd *exec.Cmd, log *os.File, start func(*exec.Cmd) (func(), error)) (*daemon, error) {
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	release, err := start(cmd)
	if err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, exited: make(chan struct{}), log: log.Name()}
	go func() { cmd.Wait(); release(); close(d.exited) }()
	return d, nil
}

// await polls ready (see poll) until the daemon serves. It fails, with
// the end of the daemon's log, when the daemon exits or limit passes
// (doing is what it did not do in time), and when ctx ends.
func (d *daemon) await(ctx context.Context, name, doing string, limit, every time.Duration, ready func() (bool, string)) error {
	last, err := poll(ctx, limit, every, d.exited, ready)
	switch err {
	case errLimit:
		return fmt.Errorf("%s did not %s within %s (last: %s); its log %s ends:\n%s", name, doing, limit, last, d.log, tail(d.log, 20))
	case errExited:
		return fmt.Errorf("%s exited; its log %s ends:\n%s", name, d.log, tail(d.log, 20))
	}
	return err
}

// Why poll gave up, beside ctx's error.
var errLimit, errExited = errors.New("time limit"), errors.New("exited")

// poll asks ready every interval until it says yes, and returns ready's
// last word. It gives up when limit passes (errLimit), when exited closes
// (errExited; nil never does), or when ctx ends.
func poll(ctx context.Context, limit, every time.Duration, exited <-chan struct{}, ready func() (bool, string)) (string, error) {
	deadline := time.Now().Add(limit)
	for {
		ok, last := ready()
		switch {
		case ok:
			return last, nil
		case time.Now().After(deadline):
			return last, errLimit
		}
		select {
		case <-exited:
			return last, errExited
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(every):
		}
	}
}

// stop ends the daemon: SIGTERM, SIGKILL after grace, and up to grace
// more for it to be reaped. It says how it ended.
func (d *daemon) stop(grace time.Duration) (string, error) {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return "SIGTERM", nil
	case <-time.After(grace):
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	how := "SIGKILL after " + grace.String()
	select {
	case <-d.exited:
		return how, nil
	case <-time.After(grace):
		return how, fmt.Errorf("pid %d did not end %s after SIGKILL", d.cmd.Process.Pid, grace)
	}
}

// Step is one client command and what it returned.
type Step struct {
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Exit    int      `json:"exit"`
	Seconds float64  `json:"seconds"`
	Output  string   `json:"output,omitempty"`
	// Err says why the command did not run or was stopped (time limit).
	Err string `json:"err,omitempty"`
	// Attempts is how many calls Retry made (0: not retried); Seconds
	// is then all of theirs, and Retried says how each failed one ended.
	Attempts int      `json:"attempts,omitempty"`
	Retried  []string `json:"retried,omitempty"`
}

// Retry makes call until it works, up to attempts calls (at least one),
// and returns the last, with the time of every call and how each failed
// one ended. It is how the kubelet treats a pod stop that failed: it tries
// again (on its next sync of the pod, about 10 s later; Retry at once).
func Retry(attempts int, call func() Step) Step {
	var st Step
	var secs float64
	var failed []string
	for n := 1; ; n++ {
		st = call()
		secs += st.Seconds
		if st.OK() || n >= attempts {
			st.Seconds, st.Attempts, st.Retried = secs, n, failed
			return st
		}
		failed = append(failed, Describe(st))
	}
}

// Describe says how a client command ended, with the end of its output
// when it failed.
func Describe(st Step) string {
	msg := fmt.Sprintf("exit %d after %.1fs", st.Exit, st.Seconds)
	if st.Err != "" {
		msg += " (" + st.Err + ")"
	}
	if out := strings.TrimSpace(st.Output); out != "" && !st.OK() {
		if len(out) > 600 {
			out = "…" + out[len(out)-600:]
		}
		msg += ": " + out
	}
	return msg
}

// OK reports whether the command ran and exited 0.
func (s Step) OK() bool { return s.Err == "" && s.Exit == 0 }

// run runs one client command with a time limit; the command's whole
// process group is killed at the limit.
func (c *Containerd) run(ctx context.Context, limit time.Duration, name string, argv ...string) Step {
	st := runStep(ctx, limit, name, argv, nil, func(cctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
		cmd.Env = c.env()
		return cmd
	}, c.opts.StartCmd)
	st.Output = dropNoise(st.Output)
	c.logf("%s: %s", name, Describe(st))
	return st
}

// runStep runs the command mk makes (in its own process group, killed
// whole at limit) through start, with stdin, and says how it ended.
func runStep(ctx context.Context, limit time.Duration, name string, argv []string, stdin io.Reader, mk func(context.Context) *exec.Cmd, start func(*exec.Cmd) (func(), error)) Step {
	st := Step{Name: name, Argv: argv, Exit: -1}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := mk(cctx)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	t0 := time.Now()
	release, err := start(cmd)
	if err == nil {
		err = cmd.Wait()
		release()
	}
	st.Seconds, st.Output = time.Since(t0).Seconds(), out.String()
	if cmd.ProcessState != nil {
		st.Exit = cmd.ProcessState.ExitCode()
	}
	var ee *exec.ExitError
	switch {
	case cctx.Err() == context.DeadlineExceeded:
		st.Err = fmt.Sprintf("no answer within %s (killed)", limit)
	case err != nil && !errors.As(err, &ee):
		st.Err = err.Error()
	}
	return st
}

// Ctr runs ctr against this containerd in namespace ns.
func (c *Containerd) Ctr(ctx context.Context, limit time.Duration, ns string, args ...string) Step {
	argv := append([]string{c.opts.Bins.Ctr, "--address", c.Layout.Socket(), "--namespace", ns}, args...)
	return c.run(ctx, limit, "ctr "+firstWords(args, 2), argv...)
}

// Crictl runs crictl against this containerd's CRI.
func (c *Containerd) Crictl(ctx context.Context, limit time.Duration, args ...string) Step {
	ep := "unix://" + c.Layout.Socket()
	argv := append([]string{c.opts.Bins.Crictl, "--runtime-endpoint", ep, "--image-endpoint", ep,
		"--timeout", limit.String(), "--config", "/dev/null"}, args...)
	return c.run(ctx, limit+5*time.Second, "crictl "+firstWords(args, 1), argv...)
}

func firstWords(args []string, n int) string {
	if len(args) < n {
		n = len(args)
	}
	return strings.Join(args[:n], " ")
}

// ImportImage imports the local image into namespace ns (ctr images
// import; the snapshotter unpacks it).
func (c *Containerd) ImportImage(ctx context.Context, ns string) Step {
	st := c.Ctr(ctx, 2*time.Minute, ns, "images", "import", "--snapshotter", c.Snapshotter, "--platform", "linux/"+runtime.GOARCH, c.Layout.Image())
	if st.OK() && !strings.Contains(st.Output, ImageName) {
		// ctr does not always print what it imported: ask containerd.
		if ls := c.Ctr(ctx, time.Minute, ns, "images", "ls", "-q"); !ls.OK() || !strings.Contains(ls.Output, ImageName) {
			st.Err = "ctr images import did not import " + ImageName + ": " + st.Output + ls.Output
		}
	}
	return st
}

// Procs lists this containerd's processes (itself, the shims, runsc, the
// containers' processes) with their cgroups.
func (c *Containerd) Procs() []Proc {
	var out []Proc
	for _, p := range ours(readProcs(), os.Getpid(), c.PID, c.Layout.Base) {
		if pr := p.proc(c.PID); pr.Cgroups != nil { // else gone meanwhile
			out = append(out, pr)
		}
	}
	return out
}

// StopReport says what Stop found and did.
type StopReport struct {
	// Exit is how containerd ended: "SIGTERM" or "SIGKILL after 10s".
	Exit string `json:"exit"`
	// Killed are processes still alive after containerd stopped (shims,
	// sandboxes, containers), killed by PID.
	Killed []Proc `json:"killed,omitempty"`
	// Unmounted are mounts left below the base folder.
	Unmounted []string `json:"unmounted,omitempty"`
	// ShimSockets are shim sockets left in /run/containerd/s.
	ShimSockets []string `json:"shimSockets,omitempty"`
	Errors      []string `json:"errors,omitempty"`
}

// Stop ends containerd (SIGTERM, SIGKILL after 10 s), kills what it left
// running, unmounts what it left mounted, and removes the base folder, the
// shim sockets and the /run/containerd folders that appeared with it. It
// leaves the test tree's cgroups to the caller, which checks them first.
func (c *Containerd) Stop() StopReport {
	var r StopReport
	if c.d != nil {
		var err error
		if r.Exit, err = c.d.stop(10 * time.Second); err != nil {
			r.Errors = append(r.Errors, "containerd: "+err.Error())
		}
	}
	killOurs(c.Layout.Base, func(p procInfo) { r.Killed = append(r.Killed, p.proc(-1)) })
	if c.logFile != nil {
		c.logFile.Close()
	}
	if c.Layout.Base != "" {
		var errs []string
		r.Unmounted, errs = removeBase(c.Layout.Base)
		r.Errors = append(r.Errors, errs...)
	}
	for _, f := range c.madeEtc {
		os.Remove(f)
	}
	socks, errs := c.shimRun.clean()
	r.ShimSockets, r.Errors = append(r.ShimSockets, socks...), append(r.Errors, errs...)
	c.logf("containerd stopped (%s); killed %d leftover processes, unmounted %d, %d shim sockets", r.Exit, len(r.Killed), len(r.Unmounted), len(r.ShimSockets))
	return r
}

// joinScript is a shell script that moves itself into cg in every
// hierarchy of tree and then execs its arguments (on cgroup v1 there is
// no clone into a cgroup). lenientBlkio skips a blkio cgroup systemd
// removed.
func joinScript(tree *cgroupfs.Tree, cg string, lenientBlkio bool) string {
	script := ""
	for _, h := range tree.Host.Hierarchies {
		if cg == "" {
			break
		}
		f := ShellQuote(filepath.Join(h.Dir(cg), "cgroup.procs"))
		join := "echo $$ >" + f + " || exit 1; "
		if lenientBlkio && tree.Host.SystemdPID1 && h.Name() == "blkio" {
			// On a systemd cgroup v1 host systemd removes it in the
			// blkio hierarchy when a scope with BlockIOAccounting
			// starts (runc's systemd driver and runsc's; measured in
			// the systemd-v1 VM). Anywhere else a missing one fails.
			join = "[ ! -e " + f + " ] || " + join
		}
		script += join
	}
	return script + `exec "$@"`
}

// killOurs SIGKILLs what is left of a daemon's processes (ours: below
// this process, naming base), up to five rounds; seen gets the first
// round's before they are killed.
func killOurs(base string, seen func(procInfo)) {
	for round := 0; round < 5; round++ {
		left := ours(readProcs(), os.Getpid(), -1, base)
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			if round == 0 && seen != nil {
				seen(p)
			}
			p.kill()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// removeBase unmounts what is mounted below base and removes it; it
// returns what it unmounted and what it could not undo.
func removeBase(base string) (unmounted, errs []string) {
	unmounted, err := mounts.Detach(base)
	if err != nil {
		errs = append(errs, err.Error())
	}
	if left, _ := mounts.Under(base); len(left) > 0 {
		errs = append(errs, fmt.Sprintf("not removing %s: %s is still mounted", base, left[0]))
	} else if err := os.RemoveAll(base); err != nil {
		errs = append(errs, err.Error())
	}
	return unmounted, errs
}

// shimRun is what of /run/containerd existed before a containerd started:
// containerd's shim library puts every shim's socket in ShimSocketDir,
// whatever containerd's own state folder.
type shimRun struct {
	made    []string // folders that were missing, deepest last
	sockets map[string]bool
}

func noteShimRun() shimRun {
	r := shimRun{sockets: map[string]bool{}}
	for _, d := range []string{"/run/containerd", ShimSocketDir, "/run/containerd/fifo"} {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			r.made = append(r.made, d)
		}
	}
	ents, _ := os.ReadDir(ShimSocketDir)
	for _, e := range ents {
		r.sockets[e.Name()] = true
	}
	return r
}

// clean removes the shim sockets that appeared since, and the folders
// that did, if empty (another containerd may have started meanwhile).
func (r shimRun) clean() (removed, errs []string) {
	ents, _ := os.ReadDir(ShimSocketDir)
	for _, e := range ents {
		if !r.sockets[e.Name()] {
			p := filepath.Join(ShimSocketDir, e.Name())
			removed = append(removed, p)
			os.Remove(p)
		}
	}
	for i := len(r.made) - 1; i >= 0; i-- {
		if err := os.Remove(r.made[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Sprintf("leaving %s: %v", r.made[i], err))
		}
	}
	return removed, errs
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ShellQuote quotes s for sh, always in single quotes (a quote inside
// closes them, is escaped, and opens them again).
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HasOverlay reports whether /proc/filesystems lists overlay.
func HasOverlay(filesystems string) bool {
	for _, line := range strings.Split(filesystems, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == "overlay" {
			return true
		}
	}
	return false
}

// dropNoise removes the line containerd 2.2+ clients print on every call on
// a cgroup v1 host (a deprecation warning), keeping the rest.
func dropNoise(out string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, "DEPRECATION: The support for cgroup v1 is deprecated") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// NewTestTree makes a test cgroup "/cgclients-<random>" in every hierarchy
// and returns it with the function that removes it (and reports what it
// could not remove): for a containerd on a shared host (cgclients serve).
func NewTestTree(host *cgroupfs.Host) (*cgroupfs.Tree, func() []string, error) {
	var b [4]byte
	rand.Read(b[:])
	tree := &cgroupfs.Tree{Host: host, Root: "/cgclients-" + hex.EncodeToString(b[:])}
	remove := func() []string {
		var left []string
		for _, h := range host.Hierarchies {
			left = append(left, cgroupfs.RemoveTree(h.Dir(tree.Root), 5*time.Second)...)
		}
		return left
	}
	if err := tree.Mkdir(tree.Root); err != nil {
		remove()
		return nil, nil, fmt.Errorf("making the test cgroup %s: %w", tree.Root, err)
	}
	return tree, remove, nil
}
