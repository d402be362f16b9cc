package clients

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestRenderKubeletConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		systemd bool
		driver  string
	}{
		{"systemd", true, "systemd"},
		{"cgroupfs", false, "cgroupfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := RenderKubeletConfig(KubeletConfig{Systemd: tc.systemd, RuntimeEndpoint: "unix:///b/containerd.sock",
				StaticPodPath: "/b/manifests", PodLogsDir: "/b/pod-logs", ReadOnlyPort: 10255, Port: 10250, HealthzPort: 10248})
			var got map[string]any
			if err := yaml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not YAML: %v\n%s", err, out)
			}
			for k, want := range map[string]any{
				"kind":                        "KubeletConfiguration",
				"apiVersion":                  "kubelet.config.k8s.io/v1beta1",
				"cgroupDriver":                tc.driver,
				"containerRuntimeEndpoint":    "unix:///b/containerd.sock",
				"staticPodPath":               "/b/manifests",
				"podLogsDirectory":            "/b/pod-logs",
				"readOnlyPort":                float64(10255),
				"address":                     "127.0.0.1",
				"failSwapOn":                  false,
				"failCgroupV1":                false,
				"imageGCHighThresholdPercent": float64(100),
				"cgroupsPerQOS":               true,
				"cgroupRoot":                  "/",
			} {
				if diff := cmp.Diff(want, got[k]); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func TestStaticPodManifest(t *testing.T) {
	out, err := StaticPodManifest(StaticPod{Name: "seed", Container: "runtime", Privileged: true,
		Mounts: []Mount{{HostPath: "/r", ContainerPath: "/r", ReadOnly: true}, {HostPath: "/s", ContainerPath: "/s"}}})
	if err != nil {
		t.Fatal(err)
	}
	var pod struct {
		Kind     string
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			HostNetwork, HostPID bool
			Containers           []struct {
				Name, Image, ImagePullPolicy string
				SecurityContext              struct{ Privileged bool }
				VolumeMounts                 []struct {
					Name, MountPath string
					ReadOnly        bool
				}
			}
			Volumes []struct {
				Name     string
				HostPath struct{ Path string }
			}
		}
	}
	if err := yaml.Unmarshal(out, &pod); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if pod.Kind != "Pod" || pod.Metadata.Name != "seed" || pod.Metadata.Namespace != KubeletNamespace {
		t.Errorf("metadata %+v", pod)
	}
	if !pod.Spec.HostNetwork || !pod.Spec.HostPID {
		t.Error("the pod must use the host's network (no CNI) and PID namespace (host PIDs)")
	}
	c := pod.Spec.Containers[0]
	if c.Name != "runtime" || c.Image != ImageName || c.ImagePullPolicy != "Never" || !c.SecurityContext.Privileged {
		t.Errorf("container %+v", c)
	}
	if len(c.VolumeMounts) != 2 || c.VolumeMounts[0].MountPath != "/r" || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[1].ReadOnly {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[1].HostPath.Path != "/s" || pod.Spec.Volumes[1].Name != c.VolumeMounts[1].Name {
		t.Errorf("volumes %+v", pod.Spec.Volumes)
	}
}

const cadvisorText = `# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="",id="/",image="",name="",namespace="",pod=""} 1234.5 1700000000000
container_cpu_usage_seconds_total{container="",id="/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu.slice",image="",name="",namespace="cgclients",pod="seed-cgc-node"} 12.25 1700000001000
container_cpu_usage_seconds_total{container="runtime",id="/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu.slice/cri-containerd-c.scope",image="localhost/cgclients/busybox:1",name="c",namespace="cgclients",pod="seed-cgc-node"} 10.5 1700000002000
container_cpu_usage_seconds_total{container="",id="/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu.slice/cri-containerd-c.scope/runsc-pause",image="",name="",namespace="",pod=""} 9
# HELP container_memory_usage_bytes x
# TYPE container_memory_usage_bytes gauge
container_memory_usage_bytes{container="",id="/",image="",name="",namespace="",pod=""} 5
`

func TestParseCPUSeries(t *testing.T) {
	got, err := ParseCPUSeries(strings.NewReader(cadvisorText))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d series, want the 4 CPU ones: %+v", len(got), got)
	}
	pod, ok := FindSeries(got, "seed-cgc-node", "")
	if !ok || pod.Seconds != 12.25 || pod.TimestampMS != 1700000001000 || pod.Namespace != "cgclients" {
		t.Errorf("pod series %+v %v", pod, ok)
	}
	c, ok := FindSeries(got, "seed-cgc-node", "runtime")
	if !ok || c.Seconds != 10.5 || !strings.HasSuffix(c.ID, "cri-containerd-c.scope") {
		t.Errorf("container series %+v %v", c, ok)
	}
	sb, ok := SeriesByID(got, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu.slice/cri-containerd-c.scope/runsc-pause")
	if !ok || sb.Seconds != 9 || sb.TimestampMS != 0 {
		t.Errorf("sandbox series %+v %v", sb, ok)
	}
	if _, ok := FindSeries(got, "other", ""); ok {
		t.Error("found a pod that is not there")
	}
}

func TestParseSummary(t *testing.T) {
	const js = `{"node":{"nodeName":"cgc-node"},"pods":[{"podRef":{"name":"seed-cgc-node","namespace":"cgclients","uid":"u"},
	  "cpu":{"time":"2026-01-01T00:00:01Z","usageCoreNanoSeconds":12250000000},
	  "containers":[{"name":"runtime","cpu":{"time":"2026-01-01T00:00:02Z","usageCoreNanoSeconds":10500000000}}]}]}`
	pod, ctr, err := ParseSummaryCPU([]byte(js), "seed-cgc-node", "runtime")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Seconds != 12.25 || ctr.Seconds != 10.5 || ctr.Time.Second() != 2 {
		t.Errorf("pod %+v container %+v", pod, ctr)
	}
	if _, _, err := ParseSummaryCPU([]byte(js), "nope", "runtime"); err == nil {
		t.Error("a pod the summary lacks: want an error")
	}
}

func TestKubeletErrors(t *testing.T) {
	log := strings.Join([]string{
		`I1204 10:00:00.000000     123 kubelet.go:1] "Starting kubelet"`,
		`E1204 10:00:01.000000     123 manager.go:2] "Failed to create existing container" err="cgroup not found" containerName="/kubepods.slice/x/runsc-pause"`,
		`W1204 10:00:02.000000     123 watcher.go:3] "cgroup warning"`,
		`E1204 10:00:03.000000     123 kubelet.go:4] "Error getting node" err="node \"cgc-node\" not found"`,
		`E1204 10:00:04.000000     123 cadvisor_stats_provider.go:5] "Unable to fetch pod log stats" err="open /var/log/pods/x: no such file"`,
		`E1204 10:00:05.000000     123 pod_container_manager_linux.go:6] "Failed to delete Cgroup paths" name="kubepods"`,
	}, "\n")
	got := KubeletErrors(log, "cgroup")
	if len(got) != 2 || !strings.Contains(got[0], "Failed to create existing container") || !strings.Contains(got[1], "Failed to delete Cgroup paths") {
		t.Errorf("errors about cgroups (in any case) %q", got)
	}
	if n := len(KubeletErrors(log, "")); n != 4 {
		t.Errorf("every error line: %d, want 4", n)
	}
}

func TestKubeletArgs(t *testing.T) {
	got := KubeletArgs("/b/config.yaml", "/b/root", "/b/containerd.sock")
	want := []string{"--config", "/b/config.yaml", "--root-dir", "/b/root", "--hostname-override", KubeletNodeName,
		"--containerd", "/b/containerd.sock", "--v", "2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStaticPodManifestUnprivileged: a container that is not privileged
// gets the capabilities added and Unconfined seccomp and AppArmor, in
// Kubernetes' v1 SecurityContext names.
func TestStaticPodManifestUnprivileged(t *testing.T) {
	out, err := StaticPodManifest(StaticPod{Name: "seed", Container: "runtime", Capabilities: []string{"SYS_ADMIN", "SYS_PTRACE"}})
	if err != nil {
		t.Fatal(err)
	}
	var pod struct {
		Spec struct {
			Containers []struct {
				SecurityContext struct {
					Privileged                      bool
					Capabilities                    struct{ Add []string }
					SeccompProfile, AppArmorProfile struct{ Type string }
				}
			}
		}
	}
	if err := yaml.Unmarshal(out, &pod); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if sc.Privileged || !slices.Equal(sc.Capabilities.Add, []string{"SYS_ADMIN", "SYS_PTRACE"}) || sc.SeccompProfile.Type != "Unconfined" || sc.AppArmorProfile.Type != "Unconfined" {
		t.Errorf("securityContext %+v in:\n%s", sc, out)
	}
}
