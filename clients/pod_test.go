package clients

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
)

// The pod and container configs of a runtime-in-a-pod (the seed): host
// PID namespace, privilege or every capability, bind mounts, in CRI's JSON
// field names as crictl reads them.
func TestPodAndContainerSpecFor(t *testing.T) {
	pod, err := PodSpecFor(PodOptions{Name: "seed", UID: "u", HostPID: true, Privileged: true}, "/l", "/kp/podu")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct{ Name, UID string } `json:"metadata"`
		Linux    struct {
			CgroupParent    string `json:"cgroup_parent"`
			SecurityContext struct {
				Privileged       bool                       `json:"privileged"`
				NamespaceOptions struct{ Network, Pid int } `json:"namespace_options"`
			} `json:"security_context"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(pod, &p); err != nil {
		t.Fatal(err)
	}
	sc := p.Linux.SecurityContext
	if p.Metadata.Name != "seed" || !sc.Privileged || sc.NamespaceOptions.Pid != 2 || sc.NamespaceOptions.Network != 2 {
		t.Errorf("pod spec %s", pod)
	}
	plain, _ := PodSpecFor(PodOptions{Name: "p", UID: "u"}, "/l", "/kp/podu")
	if strings.Contains(string(plain), "privileged") || strings.Contains(string(plain), `"pid"`) {
		t.Errorf("a plain pod asks for privilege or the host PID namespace: %s", plain)
	}

	mounts := []Mount{{HostPath: "/w/rootfs", ContainerPath: "/w/rootfs", ReadOnly: true}, {HostPath: "/w/state", ContainerPath: "/w/state"}}
	c, err := ContainerSpecFor(ContainerOptions{Name: "runtime", AllCapabilities: true, Mounts: mounts}, true)
	if err != nil {
		t.Fatal(err)
	}
	var ct struct {
		Metadata struct{ Name string } `json:"metadata"`
		Mounts   []Mount               `json:"mounts"`
		Linux    struct {
			SecurityContext struct {
				Privileged   bool `json:"privileged"`
				Capabilities struct {
					Add []string `json:"add_capabilities"`
				} `json:"capabilities"`
				Seccomp struct {
					ProfileType int `json:"profile_type"`
				} `json:"seccomp"`
				Apparmor struct {
					ProfileType int `json:"profile_type"`
				} `json:"apparmor"`
				NamespaceOptions struct{ Pid int } `json:"namespace_options"`
			} `json:"security_context"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(c, &ct); err != nil {
		t.Fatal(err)
	}
	csc := ct.Linux.SecurityContext
	if ct.Metadata.Name != "runtime" || csc.Privileged || cmp.Diff([]string{"ALL"}, csc.Capabilities.Add) != "" ||
		csc.Seccomp.ProfileType != 1 || csc.Apparmor.ProfileType != 1 || csc.NamespaceOptions.Pid != 2 {
		t.Errorf("container spec %s", c)
	}
	if d := cmp.Diff(mounts, ct.Mounts); d != "" {
		t.Errorf("mounts (-want +got):\n%s", d)
	}
	priv, _ := ContainerSpecFor(ContainerOptions{Name: "p", Privileged: true}, false)
	if !strings.Contains(string(priv), `"privileged": true`) || strings.Contains(string(priv), "capabilities") || strings.Contains(string(priv), `"command"`) {
		t.Errorf("privileged container spec %s", priv)
	}
}

func TestRenderConfigHandlerOptions(t *testing.T) {
	hs := append(testHandlers(), Handler{Name: "runc-delegated", Shim: "/b/containerd-shim-runc-v2", Runc: "/usr/sbin/runc", CgroupWritable: true})
	cfg := RenderConfig(DaemonConfig{Layout: Layout{Base: "/tmp/cgc-x"}, Handlers: hs})
	if strings.Count(cfg, "cgroup_writable = true") != 1 {
		t.Errorf("want cgroup_writable once:\n%s", cfg)
	}
	i := strings.Index(cfg, `runtimes."runc-delegated"]`)
	if i < 0 || !strings.Contains(cfg[i:], "cgroup_writable = true") || strings.Contains(cfg[:i], "cgroup_writable") {
		t.Errorf("cgroup_writable not in the runc-delegated runtime's table:\n%s", cfg)
	}
	if !strings.Contains(cfg, `default_runtime_name = "runc"`) {
		t.Error("the default runtime is not runc")
	}
	if !strings.Contains(RenderRunscConfig(RunscConfig{Binary: "b", Root: "r", Debug: true}), `"debug" = "true"`) {
		t.Error("Debug did not turn on runsc --debug")
	}
}

func TestRunConfigArgs(t *testing.T) {
	c := &Containerd{Layout: Layout{Base: "/tmp/cgc-x"}}
	runsc := Handler{Name: "runsc-patched", Shim: "/b/shim-patched", Runsc: "/b/runsc-patched"}
	got := c.RunConfigArgs(runsc, "/w/bundles/a/config.json", "cgc1-pause")
	want := []string{"run", "-d", "--fifo-dir", "/tmp/cgc-x/fifo", "--config", "/w/bundles/a/config.json",
		"--runtime", "/b/shim-patched", "--runtime-config-path", "/tmp/cgc-x/runsc-patched.toml",
		"--label", AnnotationContainerType + "=" + ContainerTypeSandbox, "cgc1-pause"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("runsc (-want +got):\n%s", d)
	}
	runc := Handler{Name: "runc", Shim: "/b/containerd-shim-runc-v2", Runc: "/usr/sbin/runc"}
	got = c.RunConfigArgs(runc, "/w/config.json", "id")
	if strings.Contains(strings.Join(got, " "), AnnotationContainerType) || got[len(got)-1] != "id" {
		t.Errorf("runc args %q", got)
	}
}

func TestRunscIdentity(t *testing.T) {
	for _, tc := range []struct {
		argv     []string
		id, root string
	}{
		{[]string{"runsc-sandbox", "--root=/b/runsc-root/runsc/cgc-a", "--log-format=json", "boot", "--bundle=/x", "pause"}, "pause", "/b/runsc-root/runsc/cgc-a"},
		{[]string{"runsc-gofer", "--root", "/b/runsc-root/runsc/k8s.io", "gofer", "abc"}, "abc", "/b/runsc-root/runsc/k8s.io"},
		{[]string{"runsc-gofer"}, "", ""},
	} {
		id, root := runscIdentity(tc.argv)
		if id != tc.id || root != tc.root {
			t.Errorf("runscIdentity(%q) = %q, %q; want %q, %q", tc.argv, id, root, tc.id, tc.root)
		}
	}
}

// The slice's directories to wait for are those systemd makes itself:
// name=systemd and cgroup2, not the v1 controllers the kubelet fills in
// nor a named hierarchy of someone else's.
func TestSystemdDirs(t *testing.T) {
	host := &cgroupfs.Host{Hierarchies: []cgroupfs.Hierarchy{
		{Key: "cpu,cpuacct", Mount: "/c/cpu"},
		{Key: "name=systemd", Mount: "/c/systemd"},
		{Key: "", Mount: "/c/unified", V2: true},
		{Key: "memory", Mount: "/c/memory"},
		{Key: "name=other", Mount: "/c/other"},
	}}
	got := systemdDirs(host, "/a.slice/a-b.slice")
	want := []string{"/c/systemd/a.slice/a-b.slice", "/c/unified/a.slice/a-b.slice"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("systemdDirs (-want +got):\n%s", diff)
	}
}

// poll with dirsExist looks again until a late directory appears, and
// names the one that never does once the limit passed.
func TestPollDirs(t *testing.T) {
	d := t.TempDir()
	late := filepath.Join(d, "late")
	go func() { time.Sleep(50 * time.Millisecond); os.Mkdir(late, 0o755) }()
	if last, err := poll(context.Background(), time.Minute, time.Millisecond, nil, dirsExist([]string{d, late})); err != nil {
		t.Fatalf("poll: %v (%s), want the late directory found", err, last)
	}
	never := filepath.Join(d, "never")
	last, err := poll(context.Background(), 20*time.Millisecond, time.Millisecond, nil, dirsExist([]string{late, never}))
	if err != errLimit || last != "not there: "+never {
		t.Errorf("poll with a missing directory: %v, %q; want errLimit naming it", err, last)
	}
}

func TestPollStops(t *testing.T) {
	// A cancelled case, or an exited daemon, ends the wait at once, not
	// after the limit (the limit and the poll here are an hour).
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	exited := make(chan struct{})
	close(exited)
	never := func() (bool, string) { return false, "" }
	done := make(chan error, 2)
	go func() { _, err := poll(ctx, time.Hour, time.Hour, nil, never); done <- err }()
	go func() { _, err := poll(context.Background(), time.Hour, time.Hour, exited, never); done <- err }()
	for range 2 {
		select {
		case err := <-done:
			if err != context.Canceled && err != errExited {
				t.Errorf("poll: %v, want the context's error or errExited", err)
			}
		case <-time.After(time.Minute): // A safety net, not a timing assert.
			t.Fatal("poll ignored the cancelled context or the exited daemon")
		}
	}
}

func TestRetry(t *testing.T) {
	fails := 2
	calls := 0
	st := Retry(5, func() Step {
		calls++
		if fails > 0 {
			fails--
			return Step{Name: "crictl stopp", Exit: 1, Seconds: 2, Output: "failed to get task: context deadline exceeded"}
		}
		return Step{Name: "crictl stopp", Seconds: 1}
	})
	if !st.OK() || calls != 3 || st.Attempts != 3 || st.Seconds != 5 || len(st.Retried) != 2 {
		t.Errorf("got %+v after %d calls: want ok, 3 attempts, 5 s, 2 retried", st, calls)
	}
	if !strings.Contains(st.Retried[0], "exit 1 after 2.0s: failed to get task: context deadline exceeded") {
		t.Errorf("retried %q", st.Retried)
	}
	calls = 0
	st = Retry(3, func() Step { calls++; return Step{Exit: 1, Seconds: 1} })
	if st.OK() || calls != 3 || st.Attempts != 3 || st.Seconds != 3 {
		t.Errorf("always failing: %+v after %d calls", st, calls)
	}
	calls = 0
	if st = Retry(0, func() Step { calls++; return Step{} }); calls != 1 || st.Attempts != 1 {
		t.Errorf("Retry(0): %d calls, %+v", calls, st)
	}
}

func TestDescribe(t *testing.T) {
	long := strings.Repeat("x", 700) + "context deadline exceeded"
	for _, tc := range []struct {
		name string
		st   Step
		want string
	}{
		{"exit and time", Step{Exit: 1, Seconds: 2.04}, "exit 1 after 2.0s"},
		{"why it was stopped", Step{Exit: -1, Seconds: 30, Err: "time limit 30s"}, "exit -1 after 30.0s (time limit 30s)"},
		{"output, trimmed", Step{Exit: 1, Seconds: 1, Output: "  E1205 failed\n"}, "exit 1 after 1.0s: E1205 failed"},
		{"the end of a long output", Step{Exit: 1, Seconds: 1, Output: long}, "exit 1 after 1.0s: …" + long[len(long)-600:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(tc.st); got != tc.want {
				t.Errorf("Describe(%+v) = %q, want %q", tc.st, got, tc.want)
			}
		})
	}
}
