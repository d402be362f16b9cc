package clients

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
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
