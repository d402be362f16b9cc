package clients

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
)

// Docker keeps its own runc; runsc gets its flags; the driver follows
// Systemd.
func TestDockerConfig(t *testing.T) {
	var got map[string]any
	o := EngineOptions{Systemd: true, RunscArgs: []string{"--debug-log=/l/"},
		Runtimes: map[string]string{"runc": "/usr/sbin/runc", "runsc-patched": "/p/bin/runsc-patched", "crun": "/usr/bin/crun"}}
	if err := json.Unmarshal(DockerConfig(o), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"runtimes": map[string]any{
			"runsc-patched": map[string]any{"path": "/p/bin/runsc-patched", "runtimeArgs": []any{"--debug-log=/l/"}},
			"crun":          map[string]any{"path": "/usr/bin/crun"},
		},
		"storage-driver": "vfs", "bridge": "none", "iptables": false, "ip-masq": false,
		"exec-opts": []any{"native.cgroupdriver=systemd"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("daemon.json (-want +got):\n%s", d)
	}
}

// Podman takes a runtime by path, Docker by name.
func TestRunArgs(t *testing.T) {
	rts := map[string]string{"runsc-stock": "/p/runsc-stock"}
	d := (&Engine{Kind: Docker, opts: EngineOptions{Runtimes: rts}}).RunArgs("runsc-stock", "--memory", "64m")
	p := (&Engine{Kind: Podman, opts: EngineOptions{Runtimes: rts}}).RunArgs("runsc-stock")
	if want := []string{"run", "-d", "--network", "none", "--runtime", "runsc-stock", "--memory", "64m", EngineImage}; !cmp.Equal(d, want) {
		t.Errorf("docker: %q, want %q", d, want)
	}
	if want := []string{"run", "-d", "--network", "none", "--runtime", "/p/runsc-stock", EngineImage}; !cmp.Equal(p, want) {
		t.Errorf("podman: %q, want %q", p, want)
	}
}

// The join script writes the shell's PID into each hierarchy's folder and
// fails on a missing one, except blkio under systemd (systemd removes it
// there on a v1 host).
func TestEngineJoin(t *testing.T) {
	for _, tc := range []struct {
		systemd bool
		wantErr bool
	}{{false, true}, {true, false}} {
		dir := t.TempDir()
		host := &cgroupfs.Host{SystemdPID1: tc.systemd, Hierarchies: []cgroupfs.Hierarchy{{Key: "memory", Mount: dir + "/memory"}, {Key: "blkio", Mount: dir + "/blkio"}}}
		if err := os.MkdirAll(dir+"/memory/t/docker", 0o755); err != nil {
			t.Fatal(err)
		}
		e := &Engine{Kind: Docker, opts: EngineOptions{Tree: &cgroupfs.Tree{Host: host, Root: "/t"}}}
		out, err := e.command(context.Background(), "true").CombinedOutput()
		if (err != nil) != tc.wantErr {
			t.Errorf("systemd %v: err %v, want error %v (%s)", tc.systemd, err, tc.wantErr, out)
		}
		if b, _ := os.ReadFile(dir + "/memory/t/docker/cgroup.procs"); len(b) == 0 {
			t.Errorf("systemd %v: nothing joined the memory folder", tc.systemd)
		}
	}
}
