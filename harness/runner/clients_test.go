package runner

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
)

func TestHandlerFor(t *testing.T) {
	b := &build.Binaries{RuncShim: "/b/containerd-shim-runc-v2",
		RunscShim: map[string]string{"patched": "/b/shim-patched", "stock": "/b/shim-stock", "pr-11-shim-state": "/b/shim-pr-11"}}
	for _, tc := range []struct {
		rt      Runtime
		want    clients.Handler
		wantErr string
	}{
		{rt: Runtime{Name: "runsc-patched", Path: "/p/runsc-patched", Kind: "runsc"}, want: clients.Handler{Name: "runsc-patched", Shim: "/b/shim-patched", Runsc: "/p/runsc-patched"}},
		{rt: Runtime{Name: "runsc-stock", Path: "/p/runsc-stock", Kind: "runsc"}, want: clients.Handler{Name: "runsc-stock", Shim: "/b/shim-stock", Runsc: "/p/runsc-stock"}},
		{rt: Runtime{Name: "runc", Path: "/usr/sbin/runc", Kind: "runc"}, want: clients.Handler{Name: "runc", Shim: "/b/containerd-shim-runc-v2", Runc: "/usr/sbin/runc"}},
		{rt: Runtime{Name: "runsc-mine", Path: "/x", Kind: "runsc"}, wantErr: "no runsc shim for runsc-mine"},
		{rt: Runtime{Name: "runsc-pr-11-shim-state", Path: "/p/runsc-pr-11-shim-state", Kind: "runsc"}, want: clients.Handler{Name: "runsc-pr-11-shim-state", Shim: "/b/shim-pr-11", Runsc: "/p/runsc-pr-11-shim-state"}},
		{rt: Runtime{Name: "runsc-pr-10-paused-kill", Path: "/x", Kind: "runsc"}, wantErr: "no runsc shim for runsc-pr-10-paused-kill"},
		{rt: Runtime{Name: "crun", Path: "/usr/bin/crun", Kind: "crun"}, wantErr: "no containerd handler is wired for crun"},
	} {
		got, err := handlerFor(tc.rt, b)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.rt.Name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.rt.Name, err)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.rt.Name, d)
		}
	}
}

func TestHasCap(t *testing.T) {
	// CapEff of this build host's root: bit 24 (CAP_SYS_RESOURCE) clear.
	host := "Name:\tcat\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\nCapEff:\t000001fffeffffff\n"
	if hasCap(host, capSysResource) {
		t.Error("CAP_SYS_RESOURCE found in 000001fffeffffff")
	}
	if !hasCap(host, 21) { // CAP_SYS_ADMIN
		t.Error("CAP_SYS_ADMIN not found in 000001fffeffffff")
	}
	if !hasCap("CapEff:\t000001ffffffffff\n", capSysResource) {
		t.Error("CAP_SYS_RESOURCE not found in a full set")
	}
	if hasCap("CapPrm:\tffffffffffffffff\n", capSysResource) {
		t.Error("a status without CapEff has no capability")
	}
}

func TestStaticBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// make test builds with CGO_ENABLED=0: the test binary is static.
	if os.Getenv("CGO_ENABLED") == "0" {
		if why := staticBinary(self); why != "" {
			t.Errorf("the test binary: %s", why)
		}
	}
	if why := staticBinary("/nonexistent"); why == "" {
		t.Error("a missing binary passed")
	}
}

func TestFoldSteps(t *testing.T) {
	rec, cmd := foldSteps([]clients.Step{
		{Name: "ctr task delete", Argv: []string{"ctr", "task", "delete", "x"}, Exit: 1, Seconds: 6.5, Output: "EBUSY"},
		{Name: "ctr container delete", Argv: []string{"ctr", "container", "delete", "x"}, Exit: 0, Seconds: 0.5},
	})
	if cmd.Exit != 1 || cmd.Dur != 7*time.Second || !strings.Contains(cmd.Output, "[ctr task delete] EBUSY") {
		t.Errorf("command %+v", cmd)
	}
	if *rec.Exit != 1 || rec.DurationMS != 7000 || rec.Command[1] != "task" {
		t.Errorf("record exit %d, %d ms, command %v", *rec.Exit, rec.DurationMS, rec.Command)
	}
	if want := "ctr task delete: exit 1 in 6.5s; ctr container delete: exit 0 in 0.5s"; rec.Note != want {
		t.Errorf("note %q, want %q", rec.Note, want)
	}
	// A command that did not run (time limit) fails the step even when
	// its exit status reads 0.
	_, cmd = foldSteps([]clients.Step{{Name: "crictl stopp", Exit: 0, Err: "no answer within 2m0s (killed)"}})
	if cmd.Exit == 0 {
		t.Error("a killed command folded into exit 0")
	}
}

func TestPodStatus(t *testing.T) {
	for _, tc := range []struct {
		s    clients.PodState
		want string
	}{
		{clients.PodState{SandboxState: "SANDBOX_READY", ContainerState: "CONTAINER_RUNNING"}, "running"},
		{clients.PodState{SandboxState: "SANDBOX_READY"}, "running"},
		{clients.PodState{SandboxState: "SANDBOX_READY", ContainerState: "CONTAINER_EXITED"}, "stopped"},
		{clients.PodState{SandboxState: "SANDBOX_NOTREADY", ContainerState: "CONTAINER_EXITED"}, "stopped"},
	} {
		if got := podStatus(tc.s); got != tc.want {
			t.Errorf("podStatus(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestClientDrivers(t *testing.T) {
	r := &Runner{}
	for cx, want := range map[string]string{"ctr": "*runner.ctrDriver", "kubelet-cgroupfs": "*runner.podDriver", "kubelet-systemd": "*runner.podDriver",
		"cri-privileged": "*runner.execDriver", "cri-delegated": "*runner.execDriver", "cri-delegated-nested": "*runner.execDriver", "kubelet-static": "*runner.execDriver", "host": "<nil>", "kubepods-delegated": "<nil>",
		"docker": "*runner.engineDriver", "docker-systemd": "*runner.engineDriver", "podman": "*runner.engineDriver", "podman-systemd": "*runner.engineDriver"} {
		if got := fmt.Sprintf("%T", r.newDriver(cx, nil)); got != want {
			t.Errorf("newDriver(%s) = %s, want %s", cx, got, want)
		}
	}
	// Only the drivers whose client makes the sandboxes are makers.
	for cx, want := range map[string]bool{"ctr": true, "kubelet-cgroupfs": true, "docker": true, "cri-privileged": false, "kubelet-static": false, "host": false} {
		if got := (&caseState{client: r.newDriver(cx, nil)}).maker() != nil; got != want {
			t.Errorf("%s: maker %v, want %v", cx, got, want)
		}
	}
	for cx, want := range map[string]string{"docker": "docker cgroupfs", "docker-systemd": "docker systemd", "podman": "podman cgroupfs", "podman-systemd": "podman systemd"} {
		kind, systemd := engineOf(cx)
		if got := kind + " " + map[bool]string{true: "systemd", false: "cgroupfs"}[systemd]; got != want {
			t.Errorf("engineOf(%s) = %s, want %s", cx, got, want)
		}
	}
}

// Each containerd driver says why its context cannot run here, the
// missing clients first, in the order the contexts need things.
func TestClientSkips(t *testing.T) {
	rt := Runtime{Name: "runc", Kind: "runc", Path: "/bin/true"}
	r := &Runner{host: &cgroupfs.Host{Mode: mode.V1}, opt: Options{ClientsError: "bin/ctr is missing"}}
	skip := func(cx string) string { return r.newDriver(cx, nil).skip(rt) }
	for _, cx := range []string{"ctr", "kubelet-systemd", "cri-delegated", "kubelet-static"} {
		if got := skip(cx); !strings.Contains(got, "make clients") || !strings.Contains(got, "bin/ctr is missing") {
			t.Errorf("%s without the clients: %q", cx, got)
		}
	}
	r.opt.Clients = &build.Binaries{}
	for cx, want := range map[string]string{"ctr": "", "kubelet-cgroupfs": "", "kubelet-systemd": "needs systemd as PID 1",
		"cri-delegated": "only on cgroup v2", "cri-privileged": "dynamically linked"} {
		if got := skip(cx); want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("%s on a v1 host without systemd: %q, want %q", cx, got, want)
		}
	}
	r.host.SystemdPID1 = true
	for _, cx := range []string{"kubelet-systemd", "cri-privileged"} {
		if got := skip(cx); !strings.Contains(got, "throwaway") {
			t.Errorf("%s with systemd on a shared host: %q", cx, got)
		}
	}
	r.opt.Throwaway = true
	if got := skip("kubelet-systemd"); got != "" {
		t.Errorf("kubelet-systemd with systemd on a throwaway host: %q", got)
	}
}
