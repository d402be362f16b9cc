package clients

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"sigs.k8s.io/yaml"
)

// A real kubelet (issue 26), standalone: no API server, pods from a
// manifest folder (static pods), this containerd's CRI as its runtime, the
// cgroup driver containerd uses (systemd where SystemdCgroup), host-network
// pods only (no CNI), the local image as pod and pause image (the CRI
// plugin's pinned sandbox image). Its read-only port (plain HTTP on
// 127.0.0.1) serves /metrics/cadvisor and /stats/summary.

// KubeletNodeName is the kubelet's --hostname-override: a static pod NAME
// runs as NAME-<node> in namespace KubeletNamespace.
const (
	KubeletNodeName  = "cgc-node"
	KubeletNamespace = "cgclients"
)

// KubeletConfig is what RenderKubeletConfig writes.
type KubeletConfig struct {
	Systemd                   bool
	RuntimeEndpoint           string // unix:///...containerd.sock
	StaticPodPath, PodLogsDir string
	Port, ReadOnlyPort        int
	HealthzPort               int
}

// RenderKubeletConfig is the KubeletConfiguration (YAML) of a standalone
// kubelet on a throwaway host: anonymous read access on 127.0.0.1 only,
// no swap, iptables or image GC surprises (the one image must stay), no
// eviction of the test's pods, cgroup v1 allowed (the systemd-v1 mode).
func RenderKubeletConfig(k KubeletConfig) string {
	driver := "cgroupfs"
	if k.Systemd {
		driver = "systemd"
	}
	cfg := map[string]any{
		"apiVersion":                    "kubelet.config.k8s.io/v1beta1",
		"kind":                          "KubeletConfiguration",
		"cgroupDriver":                  driver,
		"cgroupRoot":                    "/",
		"cgroupsPerQOS":                 true,
		"containerRuntimeEndpoint":      k.RuntimeEndpoint,
		"staticPodPath":                 k.StaticPodPath,
		"podLogsDirectory":              k.PodLogsDir,
		"fileCheckFrequency":            "2s",
		"syncFrequency":                 "10s",
		"address":                       "127.0.0.1",
		"port":                          k.Port,
		"readOnlyPort":                  k.ReadOnlyPort,
		"healthzBindAddress":            "127.0.0.1",
		"healthzPort":                   k.HealthzPort,
		"authentication":                map[string]any{"anonymous": map[string]any{"enabled": true}, "webhook": map[string]any{"enabled": false}},
		"authorization":                 map[string]any{"mode": "AlwaysAllow"},
		"failSwapOn":                    false,
		"failCgroupV1":                  false,
		"makeIPTablesUtilChains":        false,
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"evictionHard":                  map[string]string{"memory.available": "1Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.available": "1%"},
		"localStorageCapacityIsolation": false,
		"resolvConf":                    "",
		"protectKernelDefaults":         false,
		"serializeImagePulls":           true,
	}
	out, _ := yaml.Marshal(cfg)
	return string(out)
}

// StaticPod is the pod a manifest describes: one container of the local
// image in the host's network and PID namespaces.
type StaticPod struct {
	Name, Container string
	Privileged      bool
	// Capabilities are added to the runtime's default set of a container
	// that is not privileged, whose seccomp and AppArmor profiles are then
	// Unconfined (the runtime's default AppArmor profile refuses mount).
	Capabilities []string
	Mounts       []Mount
}

// StaticPodManifest is p as a v1 Pod manifest (YAML). Host paths are
// mounted at the same path (hostPath volumes), never pulled: the image is
// the local one.
func StaticPodManifest(p StaticPod) ([]byte, error) {
	var vols, mounts []map[string]any
	for i, m := range p.Mounts {
		name := fmt.Sprintf("v%d", i)
		vols = append(vols, map[string]any{"name": name, "hostPath": map[string]any{"path": m.HostPath}})
		mounts = append(mounts, map[string]any{"name": name, "mountPath": m.ContainerPath, "readOnly": m.ReadOnly})
	}
	sc := map[string]any{"privileged": p.Privileged}
	if !p.Privileged && len(p.Capabilities) > 0 {
		sc["capabilities"] = map[string]any{"add": p.Capabilities}
		sc["seccompProfile"] = map[string]any{"type": "Unconfined"}
		sc["appArmorProfile"] = map[string]any{"type": "Unconfined"}
	}
	ctr := map[string]any{
		"name":            p.Container,
		"image":           ImageName,
		"imagePullPolicy": "Never",
		"securityContext": sc,
	}
	if len(mounts) > 0 {
		ctr["volumeMounts"] = mounts
	}
	spec := map[string]any{
		"hostNetwork":                   true,
		"hostPID":                       true,
		"terminationGracePeriodSeconds": 2,
		"containers":                    []any{ctr},
	}
	if len(vols) > 0 {
		spec["volumes"] = vols
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": p.Name, "namespace": KubeletNamespace},
		"spec":       spec,
	})
}

// CPUSeries is one container_cpu_usage_seconds_total sample of
// /metrics/cadvisor: ID is the cgroup (cAdvisor's id label), Pod and
// Container the kubelet's labels ("" for a cgroup that is not a pod's or
// a container's: the pod series has Container "").
type CPUSeries struct {
	ID, Namespace, Pod, Container string
	Seconds                       float64
	TimestampMS                   int64 // 0 when the sample has none
}

// ParseCPUSeries reads every container_cpu_usage_seconds_total sample of a
// Prometheus text exposition.
func ParseCPUSeries(r io.Reader) ([]CPUSeries, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics/cadvisor: %w", err)
	}
	fam, ok := fams["container_cpu_usage_seconds_total"]
	if !ok {
		return nil, errors.New("/metrics/cadvisor has no container_cpu_usage_seconds_total")
	}
	var out []CPUSeries
	for _, m := range fam.GetMetric() {
		s := CPUSeries{TimestampMS: m.GetTimestampMs()}
		if c := m.GetCounter(); c != nil {
			s.Seconds = c.GetValue()
		} else if u := m.GetUntyped(); u != nil {
			s.Seconds = u.GetValue()
		}
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "id":
				s.ID = l.GetValue()
			case "namespace":
				s.Namespace = l.GetValue()
			case "pod":
				s.Pod = l.GetValue()
			case "container":
				s.Container = l.GetValue()
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// FindSeries is the series of a pod's container, or with container "" the
// pod's own series.
func FindSeries(all []CPUSeries, pod, container string) (CPUSeries, bool) {
	for _, s := range all {
		if s.Pod == pod && s.Container == container {
			return s, true
		}
	}
	return CPUSeries{}, false
}

// SeriesByID is the series of one cgroup (cAdvisor's id: the cgroup's path
// in the hierarchy).
func SeriesByID(all []CPUSeries, id string) (CPUSeries, bool) {
	for _, s := range all {
		if s.ID == id {
			return s, true
		}
	}
	return CPUSeries{}, false
}

// SummaryCPU is one CPU figure of /stats/summary.
type SummaryCPU struct {
	Seconds float64
	Time    time.Time
}

// ParseSummaryCPU reads the CPU of a pod and of one of its containers from
// /stats/summary (usageCoreNanoSeconds).
func ParseSummaryCPU(data []byte, pod, container string) (podCPU, ctrCPU SummaryCPU, err error) {
	type cpu struct {
		Time                 time.Time `json:"time"`
		UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
	}
	var s struct {
		Pods []struct {
			PodRef struct {
				Name string `json:"name"`
			} `json:"podRef"`
			CPU        cpu `json:"cpu"`
			Containers []struct {
				Name string `json:"name"`
				CPU  cpu    `json:"cpu"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return podCPU, ctrCPU, fmt.Errorf("parsing /stats/summary: %w", err)
	}
	conv := func(c cpu) SummaryCPU {
		return SummaryCPU{Seconds: float64(c.UsageCoreNanoSeconds) / 1e9, Time: c.Time}
	}
	for _, p := range s.Pods {
		if p.PodRef.Name != pod {
			continue
		}
		podCPU = conv(p.CPU)
		for _, c := range p.Containers {
			if c.Name == container {
				return podCPU, conv(c.CPU), nil
			}
		}
		return podCPU, ctrCPU, fmt.Errorf("/stats/summary: pod %s has no container %s", pod, container)
	}
	return podCPU, ctrCPU, fmt.Errorf("/stats/summary has no pod %s", pod)
}

// KubeletErrors are the error lines (klog's E prefix) of a kubelet log
// that contain about (case-insensitive; "" for every error line).
func KubeletErrors(log, about string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if len(l) < 5 || l[0] != 'E' || l[1] < '0' || l[1] > '9' {
			continue
		}
		if about == "" || strings.Contains(strings.ToLower(l), strings.ToLower(about)) {
			out = append(out, l)
		}
	}
	return out
}

// KubeletArgs is the kubelet's command line. --containerd points its
// cAdvisor at this containerd: cAdvisor's containerd handler, which gives
// a container's cgroup its pod, namespace and container labels in
// /metrics/cadvisor, dials /run/containerd/containerd.sock otherwise
// (measured: without it the container has no series of its own, only its
// cgroup's raw one).
func KubeletArgs(config, rootDir, containerdSocket string) []string {
	return []string{"--config", config, "--root-dir", rootDir, "--hostname-override", KubeletNodeName,
		"--containerd", containerdSocket, "--v", "2"}
}

// KubeletOptions says how to start a kubelet against a running containerd.
type KubeletOptions struct {
	Bin string
	// Limit bounds the wait for its healthz (default 3 minutes; a VM
	// without KVM needs more).
	Limit time.Duration
}

// Kubelet is a running standalone kubelet.
type Kubelet struct {
	c *Containerd
	// Dir holds root/ (--root-dir), manifests/, pod-logs/, config.yaml
	// and kubelet.log.
	Dir                       string
	PID                       int
	ReadOnlyPort, HealthzPort int
	d                         *daemon
	logFile                   *os.File
}

func (k *Kubelet) manifests() string { return filepath.Join(k.Dir, "manifests") }

// Log is the kubelet's log file.
func (k *Kubelet) Log() string { return filepath.Join(k.Dir, "kubelet.log") }

// freePorts asks the kernel for n free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// StartKubelet starts a standalone kubelet on this containerd's CRI, with
// the driver containerd uses, and waits until its healthz answers.
func (c *Containerd) StartKubelet(ctx context.Context, o KubeletOptions) (k *Kubelet, err error) {
	if o.Bin == "" {
		return nil, errors.New("no kubelet binary (make clients builds bin/kubelet)")
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	k = &Kubelet{c: c, Dir: filepath.Join(c.Layout.Base, "kubelet"), ReadOnlyPort: ports[1], HealthzPort: ports[2]}
	for _, d := range []string{k.manifests(), filepath.Join(k.Dir, "root"), filepath.Join(k.Dir, "pod-logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	cfg := RenderKubeletConfig(KubeletConfig{Systemd: c.opts.SystemdCgroup, RuntimeEndpoint: "unix://" + c.Layout.Socket(),
		StaticPodPath: k.manifests(), PodLogsDir: filepath.Join(k.Dir, "pod-logs"),
		Port: ports[0], ReadOnlyPort: k.ReadOnlyPort, HealthzPort: k.HealthzPort})
	cfgPath := filepath.Join(k.Dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if k.logFile, err = os.Create(k.Log()); err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Bin, KubeletArgs(cfgPath, filepath.Join(k.Dir, "root"), c.Layout.Socket())...)
	cmd.Env = c.env()
	if k.d, err = startDaemon(cmd, k.logFile, c.opts.StartCmd); err != nil {
		k.logFile.Close()
		return nil, fmt.Errorf("starting the kubelet: %w", err)
	}
	k.PID = cmd.Process.Pid
	c.logf("kubelet pid %d, folder %s, read-only port %d", k.PID, k.Dir, k.ReadOnlyPort)
	if o.Limit <= 0 {
		o.Limit = 3 * time.Minute
	}
	err = k.d.await(ctx, "the kubelet", "answer ok on healthz", o.Limit, time.Second, func() (bool, string) {
		b, err := k.get(ctx, k.HealthzPort, "/healthz")
		return err == nil && strings.TrimSpace(string(b)) == "ok", fmt.Sprintf("%q %v", b, err)
	})
	if err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

func (k *Kubelet) get(ctx context.Context, port int, path string) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, b)
	}
	return b, err
}

// CPUMetrics reads container_cpu_usage_seconds_total from
// /metrics/cadvisor.
func (k *Kubelet) CPUMetrics(ctx context.Context) ([]CPUSeries, error) {
	b, err := k.get(ctx, k.ReadOnlyPort, "/metrics/cadvisor")
	if err != nil {
		return nil, err
	}
	return ParseCPUSeries(strings.NewReader(string(b)))
}

// Summary reads /stats/summary.
func (k *Kubelet) Summary(ctx context.Context) ([]byte, error) {
	return k.get(ctx, k.ReadOnlyPort, "/stats/summary")
}

// AddStaticPod writes p's manifest into the manifest folder and waits until
// the kubelet runs it: the pod sandbox ready and its container running,
// both seen over CRI. It returns the pod as a Pod of this containerd
// (Exec, Inspect work on it; its cgroup is the kubelet's).
func (k *Kubelet) AddStaticPod(ctx context.Context, p StaticPod, limit time.Duration) (*Pod, error) {
	data, err := StaticPodManifest(p)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(k.manifests(), p.Name+".yaml"), data, 0o644); err != nil {
		return nil, err
	}
	pod := &Pod{c: k.c, opts: PodOptions{Name: p.Name + "-" + KubeletNodeName, HostPID: true, Privileged: p.Privileged}, Limit: 2 * time.Minute}
	err = k.d.await(ctx, "the kubelet", "run the static pod "+p.Name, limit, 2*time.Second, func() (bool, string) {
		st := k.c.Crictl(ctx, 30*time.Second, "ps", "-q", "--state", "running", "--label", "io.kubernetes.pod.name="+pod.opts.Name, "--name", "^"+p.Container+"$")
		ids := strings.Fields(st.Output)
		if !st.OK() || len(ids) != 1 {
			return false, fmt.Sprintf("crictl ps: exit %d %s %q", st.Exit, st.Err, st.Output)
		}
		st = k.c.Crictl(ctx, 30*time.Second, "inspect", "-o", "json", ids[0])
		sandbox, uid, err := ParseContainerPod(st.Output)
		if !st.OK() || err != nil {
			return false, fmt.Sprintf("crictl inspect: exit %d %s %v", st.Exit, st.Err, err)
		}
		pod.ContainerID, pod.SandboxID, pod.UID = ids[0], sandbox, uid
		return true, ""
	})
	if err != nil {
		return nil, err
	}
	return pod, nil
}

// RemoveStaticPod deletes the pod's manifest and waits until the kubelet
// has stopped its sandbox (containerd lists no ready pod of that name;
// the kubelet's garbage collection removes the stopped one later) and gone
// is true (the pod's cgroup is gone, as the caller sees it). It returns
// how long that took.
func (k *Kubelet) RemoveStaticPod(ctx context.Context, name string, limit time.Duration, gone func() bool) (time.Duration, error) {
	start := time.Now()
	if err := os.Remove(filepath.Join(k.manifests(), name+".yaml")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	full := name + "-" + KubeletNodeName
	err := k.d.await(ctx, "the kubelet", "remove the static pod "+name, limit, time.Second, func() (bool, string) {
		st := k.c.Crictl(ctx, 30*time.Second, "pods", "-q", "--state", "ready", "--name", "^"+full+"$")
		if !st.OK() {
			return false, fmt.Sprintf("crictl pods: exit %d %s", st.Exit, st.Err)
		}
		if ids := strings.Fields(st.Output); len(ids) > 0 {
			return false, "containerd still lists the pod sandbox " + ids[0] + " ready"
		}
		return gone(), "the pod's cgroup is still there"
	})
	return time.Since(start), err
}

// Stop ends the kubelet (SIGTERM, SIGKILL after 10 s). The pods it
// started keep running: containerd's Stop ends them.
func (k *Kubelet) Stop() error {
	if k == nil || k.d == nil {
		return nil
	}
	defer k.logFile.Close()
	if _, err := k.d.stop(10 * time.Second); err != nil {
		return fmt.Errorf("the kubelet: %w", err)
	}
	return nil
}
