package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/runsc-cgroups/cgconform/clients/build"
	"github.com/runsc-cgroups/cgconform/harness/cgroupfs"
)

func TestKubeletCPUVerdict(t *testing.T) {
	two := []sandboxCPU{{Label: "a", Cgroup: "/p/c/a", Own: 2.0, Cadvisor: 1.9}, {Label: "b", Cgroup: "/p/b", Own: 2.0, Cadvisor: -1}}
	for _, tc := range []struct {
		name      string
		m         kubeletCPU
		chargedTo string
		atLeast   float64
		want      string
	}{
		{"container has it all", kubeletCPU{Burn: 2 * time.Second, Sandboxes: two, Container: 4.1, Pod: 4.3}, "container", 0.9, ""},
		{"container short", kubeletCPU{Burn: 2 * time.Second, Sandboxes: two, Container: 2.0, Pod: 4.3}, "container", 0.9, "container's container_cpu_usage_seconds_total +2.00s of the sandboxes' 4.00s (50%), want at least 90%"},
		{"pod has it", kubeletCPU{Burn: 2 * time.Second, Sandboxes: two, Container: 0.1, Pod: 3.7}, "pod", 0.9, ""},
		{"pod short", kubeletCPU{Burn: 2 * time.Second, Sandboxes: two, Container: 0.1, Pod: 2.1}, "pod", 0.9, "pod's container_cpu_usage_seconds_total +2.10s"},
		{"record only", kubeletCPU{Burn: 2 * time.Second, Sandboxes: two}, "", 0, ""},
		{"no burn", kubeletCPU{Burn: 2 * time.Second, Sandboxes: []sandboxCPU{{Label: "a", Own: 0.1}}, Container: 5}, "container", 0.9, "the burn did not run"},
		{"no sandbox", kubeletCPU{Burn: 2 * time.Second}, "", 0, "the burn did not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.m.verdict(tc.chargedTo, tc.atLeast)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("verdict = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestKubeletCPUNote(t *testing.T) {
	m := kubeletCPU{Burn: 2 * time.Second, Sandboxes: []sandboxCPU{{Label: "a", Cgroup: "/p/c/a", Own: 2.0, Cadvisor: 1.9}, {Label: "b", Cgroup: "/p/b", Own: 2.0, Cadvisor: -1}},
		Container: 2.0, Pod: 4.2, ContainerID: "/p/c", SummaryContainer: 2.1, SummaryPod: 4.1}
	got := m.note()
	for _, want := range []string{"their own cgroups charged 4.00s", "a 2.00s in /p/c/a (cAdvisor 1.90s)", "b 2.00s in /p/b (no cAdvisor series)",
		"container /p/c +2.00s (50% of the sandboxes')", "pod +4.20s (105%)", "/stats/summary: container +2.10s, pod +4.10s"} {
		if !strings.Contains(got, want) {
			t.Errorf("note lacks %q:\n%s", want, got)
		}
	}
	m.SummaryContainer = -1
	if strings.Contains(m.note(), "/stats/summary") {
		t.Error("a summary that was not read is reported")
	}
}

func TestPodDir(t *testing.T) {
	if got := podDir("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu.slice/cri-containerd-c.scope"); got != "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu.slice" {
		t.Errorf("podDir = %q", got)
	}
}

// kubelet-static skips, saying why, without bin/kubelet or without
// systemd as PID 1.
func TestKubeletStaticSkip(t *testing.T) {
	rt := Runtime{Name: Candidate, Kind: "runsc", Path: "/bin/true"}
	r := &Runner{host: &cgroupfs.Host{SystemdPID1: true}, opt: Options{Clients: &build.Binaries{}, Throwaway: true}}
	if got := r.clientSkip("kubelet-static", rt); !strings.Contains(got, "make clients builds it") {
		t.Errorf("without bin/kubelet: %q", got)
	}
	r.opt.Clients.Kubelet = "/bin/kubelet"
	r.host.SystemdPID1 = false
	if got := r.clientSkip("kubelet-static", rt); !strings.Contains(got, "systemd cgroup driver") {
		t.Errorf("without systemd: %q", got)
	}
	r.host.SystemdPID1, r.opt.Throwaway = true, false
	if got := r.clientSkip("kubelet-static", rt); !strings.Contains(got, "throwaway") {
		t.Errorf("on a shared host: %q", got)
	}
}
