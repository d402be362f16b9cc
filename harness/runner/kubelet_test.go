package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/runsc-cgroups/cgconform/base/cgroupfs"
	"github.com/runsc-cgroups/cgconform/base/mode"
	"github.com/runsc-cgroups/cgconform/base/proc"
	"github.com/runsc-cgroups/cgconform/clients"
	"github.com/runsc-cgroups/cgconform/clients/build"
)

func TestKubeletCPUVerdict(t *testing.T) {
	// a runs beneath the container /p/c, b beside it in the pod /p.
	two := []sandboxCPU{{Label: "a", Cgroup: "/p/c/a", Own: 2.0, Cadvisor: 1.9}, {Label: "b", Cgroup: "/p/b", Own: 2.0, Cadvisor: -1}}
	nested := []sandboxCPU{{Label: "a", Cgroup: "/p/c/a", Own: 2.0}, {Label: "b", Cgroup: "/p/c/actors/b", Own: 2.0}}
	at := func(m kubeletCPU) kubeletCPU {
		m.Burn, m.ContainerCgroup, m.PodCgroup = 2*time.Second, "/p/c", "/p"
		return m
	}
	for _, tc := range []struct {
		name      string
		m         kubeletCPU
		chargedTo string
		atLeast   float64
		want      string
	}{
		{"container has it all", at(kubeletCPU{Sandboxes: nested, Container: 4.6, ContainerFile: 4.5, Pod: 4.8, PodFile: 4.7}), "container", 0.9, ""},
		{"container short", at(kubeletCPU{Sandboxes: two, Container: 2.5, ContainerFile: 2.5, Pod: 4.8, PodFile: 4.7}), "container", 0.9, "container's container_cpu_usage_seconds_total +2.50s; less the 0.50s its own processes used, +2.00s of the sandboxes' 4.00s (50%), want at least 90%"},
		// The seed's case: the sandboxes beside C, C busy with runsc exec
		// itself. The raw figure is 100 % of the sandboxes', none of it
		// theirs.
		{"container busy itself, sandboxes beside it", at(kubeletCPU{Sandboxes: []sandboxCPU{{Label: "a", Cgroup: "/p/a", Own: 2.0}, {Label: "b", Cgroup: "/p/b", Own: 2.0}}, Container: 4.0, ContainerFile: 4.0, Pod: 8.1, PodFile: 8.0}), "container", 0.9, "less the 4.00s its own processes used, +0.00s of the sandboxes' 4.00s (0%)"},
		// The kubelet's figure lags the cgroup's (a stale sample).
		{"container figure stale", at(kubeletCPU{Sandboxes: nested, Container: 1.0, ContainerFile: 4.5, Pod: 4.8, PodFile: 4.7}), "container", 0.9, "+1.00s; less the 0.50s its own processes used, +0.50s"},
		{"pod has it", at(kubeletCPU{Sandboxes: two, Container: 0.1, ContainerFile: 0.1, Pod: 4.3, PodFile: 4.4}), "pod", 0.9, ""},
		{"pod short: one sandbox outside the pod", at(kubeletCPU{Sandboxes: []sandboxCPU{{Label: "a", Cgroup: "/pause", Own: 2.0}, {Label: "b", Cgroup: "/p/b", Own: 2.0}}, Container: 1.5, ContainerFile: 1.5, Pod: 3.6, PodFile: 3.6}), "pod", 0.9, "pod's container_cpu_usage_seconds_total +3.60s; less the 1.60s its own processes used, +2.00s of the sandboxes' 4.00s (50%)"},
		{"record only", at(kubeletCPU{Sandboxes: two}), "", 0, ""},
		// --ignore-cgroups: both in C, measured by their processes.
		{"container holds sandboxes in it", at(kubeletCPU{Sandboxes: []sandboxCPU{{Label: "a", Cgroup: "/p/c", Procs: []int{7}, Own: 2.0}, {Label: "b", Cgroup: "/p/c", Procs: []int{9}, Own: 2.0}}, Container: 4.6, ContainerFile: 4.5, Pod: 4.8, PodFile: 4.7}), "container", 0.9, ""},
		{"no burn", at(kubeletCPU{Sandboxes: []sandboxCPU{{Label: "a", Own: 0.1}}, Container: 5}), "container", 0.9, "the burn did not run"},
		{"no sandbox", at(kubeletCPU{}), "", 0, "the burn did not run"},
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
	m := kubeletCPU{Burn: 2 * time.Second, Sandboxes: []sandboxCPU{{Label: "a", Cgroup: "/p/c/a", Own: 2.0, Cadvisor: 1.9}, {Label: "b", Cgroup: "/p/b", Own: 2.0, Cadvisor: 0.1, CadvisorStale: true}, {Label: "x", Cgroup: "/x", Own: 0, Cadvisor: -1}},
		Container: 2.5, Pod: 4.6, ContainerID: "/p/c", ContainerCgroup: "/p/c", PodCgroup: "/p", ContainerFile: 2.5, PodFile: 4.5, SummaryContainer: 2.1, SummaryPod: 4.1}
	got := m.note()
	for _, want := range []string{"they used 4.00s", "a 2.00s in /p/c/a (cAdvisor 1.90s)", "b 2.00s in /p/b (cAdvisor 0.10s, its last sample before the burn ended)", "x 0.00s in /x (no cAdvisor series)",
		"container /p/c +2.50s (62% of the sandboxes')", "pod +4.60s (115%)",
		"container less its own 0.50s: +2.00s (50%; sandboxes beneath it: a)", "pod less its own 0.50s: +4.10s (102%; sandboxes beneath it: a, b)",
		"/stats/summary: container +2.10s, pod +4.10s"} {
		if !strings.Contains(got, want) {
			t.Errorf("note lacks %q:\n%s", want, got)
		}
	}
	m.SummaryContainer = -1
	if strings.Contains(m.note(), "/stats/summary") {
		t.Error("a summary that was not read is reported")
	}
}

// A sample counts only when both the container's and the pod's series were
// taken after the moment: in the systemd-v2 VM the pod's lagged the
// container's, and the pod was reported +1.76 s while a sandbox inside it
// alone used 3.18 s.
func TestSampleFresh(t *testing.T) {
	since := time.Unix(1000, 0)
	ms := func(s int64) int64 { return s * 1000 }
	for _, tc := range []struct {
		name           string
		container, pod int64
		now            time.Time
		want           string
	}{
		{"both fresh", ms(1005), ms(1003), since.Add(6 * time.Second), ""},
		{"pod stale", ms(1005), ms(999), since.Add(6 * time.Second), "the pod's latest sample is from 1970-01-01T00:16:39Z"},
		{"container stale", ms(1000), ms(1003), since.Add(6 * time.Second), "the container's latest sample"},
		{"no timestamps yet", 0, 0, since.Add(6 * time.Second), "no timestamp: waiting 25s"},
		{"no timestamps, long after", 0, 0, since.Add(26 * time.Second), ""},
		{"pod without a timestamp, early", ms(1005), 0, since.Add(6 * time.Second), "the pod's series has no timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := sampleFresh(clients.CPUSeries{TimestampMS: tc.container}, clients.CPUSeries{TimestampMS: tc.pod}, since, tc.now)
			if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
				t.Errorf("sampleFresh = %v %q, want %q", ok, why, tc.want)
			}
		})
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
	if got := r.newDriver("kubelet-static", nil).skip(rt); !strings.Contains(got, "make clients builds it") {
		t.Errorf("without bin/kubelet: %q", got)
	}
	r.opt.Clients.Kubelet = "/bin/kubelet"
	r.host.SystemdPID1 = false
	if got := r.newDriver("kubelet-static", nil).skip(rt); !strings.Contains(got, "systemd cgroup driver") {
		t.Errorf("without systemd: %q", got)
	}
	r.host.SystemdPID1, r.opt.Throwaway = true, false
	if got := r.newDriver("kubelet-static", nil).skip(rt); !strings.Contains(got, "throwaway") {
		t.Errorf("on a shared host: %q", got)
	}
	// The caller's move into a leaf is a cgroup v2 sequence.
	r.opt.Throwaway, r.host.Mode = true, mode.V1
	if got := r.newDriver("kubelet-static-nested", nil).skip(rt); !strings.Contains(got, "only on cgroup v2") {
		t.Errorf("kubelet-static-nested on v1: %q", got)
	}
	// On v2 it goes on to kubelet-static's own checks.
	r.host.Mode, r.opt.Clients.Kubelet = mode.V2, ""
	if got := r.newDriver("kubelet-static-nested", nil).skip(rt); !strings.Contains(got, "make clients builds it") {
		t.Errorf("kubelet-static-nested on v2 without bin/kubelet: %q", got)
	}
}

// TestTreeCPU: a sandbox's CPU by process is its processes' and that of
// every process below them, and nothing else's.
func TestTreeCPU(t *testing.T) {
	all := []proc.Stat{
		{PID: 1, CPU: 1000},
		{PID: 10, PPID: 1, CPU: 100}, // the sandbox
		{PID: 11, PPID: 10, CPU: 50}, // a stub
		{PID: 12, PPID: 11, CPU: 25},
		{PID: 20, PPID: 1, CPU: 30},  // the gofer
		{PID: 30, PPID: 1, CPU: 400}, // the container's own
	}
	if got, want := treeCPU(all, []int{10, 20}), 2050*time.Millisecond; got != want {
		t.Errorf("treeCPU = %v, want %v", got, want)
	}
}
