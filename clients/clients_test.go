package clients

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var tableHeader = regexp.MustCompile(`^\s*\[\[?([^\]]+)\]\]?\s*$`)

// tables lists the TOML table headers of a rendered file, failing on
// duplicates (TOML forbids defining a table twice).
func tables(t *testing.T, toml string) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(toml, "\n") {
		m := tableHeader.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(strings.TrimSpace(line), "[[") {
			continue
		}
		if seen[m[1]] {
			t.Errorf("table [%s] defined twice", m[1])
		}
		seen[m[1]] = true
		out = append(out, m[1])
	}
	return out
}

func testHandlers() []Handler {
	return []Handler{
		{Name: HandlerRunsc, Shim: "/b/containerd-shim-runsc-v1-patched", Runsc: "/b/runsc-patched"},
		{Name: HandlerRunscStock, Shim: "/b/containerd-shim-runsc-v1-stock", Runsc: "/b/runsc-stock"},
		{Name: HandlerRunc, Shim: "/b/containerd-shim-runc-v2", Runc: "/usr/sbin/runc"},
	}
}

// parseTOML reads the TOML RenderConfig writes (no TOML library is in
// go.mod): each value under its full key, table path and key joined by a
// dot, strings unquoted, an array of tables' entries numbered ([0]). It
// fails on a line that is neither a table, a key = value, a comment nor
// blank, and on a key set twice.
func parseTOML(t *testing.T, toml string) map[string]string {
	t.Helper()
	kv := regexp.MustCompile(`^([A-Za-z0-9_]+) = (.+)$`)
	out := map[string]string{}
	arrays := map[string]int{}
	table := ""
	for n, line := range strings.Split(toml, "\n") {
		line = strings.TrimSpace(line)
		switch m := tableHeader.FindStringSubmatch(line); {
		case line == "" || strings.HasPrefix(line, "#"):
		case m != nil && strings.HasPrefix(line, "[["):
			table = fmt.Sprintf("%s[%d]", m[1], arrays[m[1]])
			arrays[m[1]]++
		case m != nil:
			table = m[1]
		default:
			m := kv.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("line %d is not TOML this test reads: %q", n+1, line)
			}
			key, v := table+"."+m[1], m[2]
			if s, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
				v = s
			}
			if _, dup := out[key]; dup {
				t.Errorf("line %d sets %s twice", n+1, key)
			}
			out[key] = v
		}
	}
	return out
}

func TestRenderConfig(t *testing.T) {
	l := Layout{Base: "/tmp/cgc-x"}
	for _, systemd := range []bool{false, true} {
		cfg := RenderConfig(DaemonConfig{Layout: l, Handlers: testHandlers(), SystemdCgroup: systemd, Snapshotter: "native"})
		ts := tables(t, cfg)
		for _, want := range []string{
			`grpc`, `ttrpc`,
			`plugins."io.containerd.cri.v1.images".pinned_images`,
			`plugins."io.containerd.cri.v1.runtime".containerd.runtimes."runsc".options`,
			`plugins."io.containerd.cri.v1.runtime".containerd.runtimes."runsc-stock".options`,
			`plugins."io.containerd.cri.v1.runtime".containerd.runtimes."runc".options`,
		} {
			if !slices.Contains(ts, want) {
				t.Errorf("no table [%s] in:\n%s", want, cfg)
			}
		}
		rt := `plugins."io.containerd.cri.v1.runtime".containerd.runtimes.`
		want := map[string]string{
			".version":     "3",
			".root":        "/tmp/cgc-x/root",
			".state":       "/tmp/cgc-x/state",
			"grpc.address": "/tmp/cgc-x/containerd.sock",
			`plugins."io.containerd.cri.v1.images".pinned_images.sandbox`:            ImageName,
			`plugins."io.containerd.cri.v1.images".snapshotter`:                      "native",
			`plugins."io.containerd.transfer.v1.local".unpack_config[0].snapshotter`: "native",
			`plugins."io.containerd.cri.v1.runtime".restrict_oom_score_adj`:          "true",
			rt + `"runsc-stock".runtime_path`:                                        "/b/containerd-shim-runsc-v1-stock",
			rt + `"runsc-stock".options.ConfigPath`:                                  "/tmp/cgc-x/runsc-stock.toml",
			rt + `"runsc".options.TypeUrl`:                                           "io.containerd.runsc.v1.options",
			rt + `"runc".options.BinaryName`:                                         "/usr/sbin/runc",
			rt + `"runc".options.Root`:                                               "/tmp/cgc-x/runc-root",
			rt + `"runc".options.SystemdCgroup`:                                      strconv.FormatBool(systemd),
		}
		got := parseTOML(t, cfg)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("systemd=%t: %s = %q, want %q; config:\n%s", systemd, k, got[k], v, cfg)
			}
		}
		// SystemdCgroup is the runc handler's alone; nothing may point
		// outside the private base but the binaries.
		for k, v := range got {
			if strings.HasSuffix(k, ".SystemdCgroup") && k != rt+`"runc".options.SystemdCgroup` {
				t.Errorf("%s set: only the runc handler has SystemdCgroup", k)
			}
			vs := []string{v}
			if strings.HasPrefix(v, "[") { // an array of strings
				vs = nil
				for _, q := range regexp.MustCompile(`"[^"]*"`).FindAllString(v, -1) {
					s, _ := strconv.Unquote(q)
					vs = append(vs, s)
				}
			}
			for _, v := range vs {
				if strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "/tmp/cgc-x/") && !strings.HasPrefix(v, "/b/") && v != "/usr/sbin/runc" {
					t.Errorf("%s holds %q: a path outside the base folder", k, v)
				}
			}
		}
	}
}

func TestRenderRunscConfig(t *testing.T) {
	got := RenderRunscConfig(RunscConfig{Binary: "/b/runsc-patched", Root: "/r/runsc", DebugLog: "/l/", SystemdCgroup: true})
	want := `# Written by clients.RenderRunscConfig.
binary_name = "/b/runsc-patched"
root = "/r/runsc"

[runsc_config]
  "debug-log" = "/l/"
  "network" = "none"
  "systemd-cgroup" = "true"
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Contains(RenderRunscConfig(RunscConfig{Binary: "b", Root: "r"}), "systemd-cgroup") {
		t.Error("systemd-cgroup set without SystemdCgroup")
	}
}

func TestOursAndRoles(t *testing.T) {
	base := "/tmp/cgclients-1"
	// 5 is the harness, a child subreaper: its daemon's shims were
	// re-parented to it.
	all := []procInfo{
		{pid: 1, ppid: 0, comm: "init", argv: []string{"/sbin/init"}},
		{pid: 5, ppid: 1, comm: "cgconform", argv: []string{"bin/cgconform", "-out", "/tmp/x"}},
		{pid: 10, ppid: 5, comm: "containerd", argv: []string{"/b/containerd", "--config", base + "/config.toml"}},
		{pid: 20, ppid: 5, comm: "containerd-shim", argv: []string{"/b/containerd-shim-runsc-v1-patched", "-namespace", "k8s.io", "-address", base + "/containerd.sock"}},
		{pid: 21, ppid: 20, comm: "exe", argv: []string{"runsc-sandbox", "--root=" + base + "/runsc-root/runsc", "boot"}},
		{pid: 22, ppid: 20, comm: "exe", argv: []string{"runsc-gofer", "--root=" + base + "/runsc-root/runsc", "gofer"}},
		{pid: 30, ppid: 5, comm: "containerd-shim", argv: []string{"/b/containerd-shim-runc-v2", "-address", base + "/containerd.sock"}},
		{pid: 31, ppid: 30, comm: "sh", argv: []string{"/bin/sh", "-c", "sleep"}},
		{pid: 32, ppid: 31, comm: "sleep", argv: []string{"sleep", "1000"}},
		// Another containerd on the same machine, not ours.
		{pid: 40, ppid: 1, comm: "containerd-shim", argv: []string{"/usr/bin/containerd-shim-runc-v2", "-address", "/tmp/cgclients-10/containerd.sock"}},
		{pid: 41, ppid: 40, comm: "sleep", argv: []string{"sleep"}},
		// Someone reading our containerd's log: it names the folder, but
		// it is not below the harness.
		{pid: 50, ppid: 1, comm: "tail", argv: []string{"tail", "-f", base + "/containerd.log"}},
		{pid: 51, ppid: 50, comm: "sleep", argv: []string{"sleep"}},
	}
	got := map[int]string{}
	for _, p := range ours(all, 5, 10, base) {
		got[p.pid] = role(p, 10)
	}
	want := map[int]string{10: RoleContainerd, 20: RoleShim, 21: RoleSandbox, 22: RoleGofer, 30: RoleShim, 31: RoleContainer, 32: RoleContainer}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ours (-want +got):\n%s", diff)
	}
	if len(ours(all, 5, -1, "")) != 0 {
		t.Error("an empty base matched processes")
	}
	if got := ours(all, 40, -1, base); len(got) != 0 {
		t.Errorf("below another process, picked %v", got)
	}
}

func TestSliceDirAndKubeletParent(t *testing.T) {
	for _, tc := range []struct{ slice, dir string }{
		{"-.slice", "/"},
		{"kubepods.slice", "/kubepods.slice"},
		{"kubepods-besteffort-pod1_2.slice", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice"},
	} {
		got, err := SliceDir(tc.slice)
		if err != nil || got != tc.dir {
			t.Errorf("SliceDir(%q) = %q, %v; want %q", tc.slice, got, err, tc.dir)
		}
	}
	for _, bad := range []string{"a.scope", "a--b.slice", "-a.slice", "a/b.slice", ".slice"} {
		if _, err := SliceDir(bad); err == nil {
			t.Errorf("SliceDir(%q) accepted", bad)
		}
	}
	if got := KubeletParent(true, "/ignored", "ab-cd"); got != "kubepods-besteffort-podab_cd.slice" {
		t.Errorf("systemd parent %q", got)
	}
	if got := KubeletParent(false, "/cgc-1", "ab-cd"); got != "/cgc-1/kubepods/besteffort/podab-cd" {
		t.Errorf("cgroupfs parent %q", got)
	}
	if got := KubeletParent(false, "", "u"); got != "/kubepods/besteffort/podu" {
		t.Errorf("cgroupfs parent at the root %q", got)
	}
	if u := NewUID(); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(u) {
		t.Errorf("NewUID %q is not a v4 UUID", u)
	}
}

func TestParseInspect(t *testing.T) {
	out, _ := json.Marshal(map[string]any{
		"status": map[string]any{"id": "abc", "state": "SANDBOX_READY"},
		"info": map[string]any{"pid": 4242, "runtimeSpec": map[string]any{
			"linux": map[string]any{"cgroupsPath": "kubepods-besteffort-podx.slice:cri-containerd:abc"}}},
	})
	pid, state, err := ParseInspect(string(out))
	if err != nil || pid != 4242 || state != "SANDBOX_READY" {
		t.Errorf("got %d %q %v", pid, state, err)
	}
	if _, _, err := ParseInspect(`{"info":{}}`); err == nil {
		t.Error("output without status.id accepted")
	}
	if _, _, err := ParseInspect(`{"status":`); err == nil {
		t.Error("truncated JSON accepted")
	}
}

func TestParseID(t *testing.T) {
	id := strings.Repeat("ab", 32)
	for _, out := range []string{
		"W1203 some warning\n" + id + "\n",
		id + "\nERRO[0002] error waiting for container: context canceled", // docker run -d, exit 0
	} {
		if got, err := ParseID(out); err != nil || got != id {
			t.Errorf("ParseID(%q) = %q, %v", out, got, err)
		}
	}
	for _, bad := range []string{"", "E1203 RunPodSandbox failed", strings.Repeat("g", 64), "docker: Error response from daemon: canceled"} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) accepted", bad)
		}
	}
}

func TestTaskPID(t *testing.T) {
	out := "TASK            PID     STATUS\npause-abc       1234    RUNNING\npause-abcd      99      STOPPED\n"
	if pid, st := TaskPID(out, "pause-abc"); pid != 1234 || st != "RUNNING" {
		t.Errorf("got %d %q", pid, st)
	}
	if pid, st := TaskPID(out, "pause-abcd"); pid != 99 || st != "STOPPED" {
		t.Errorf("got %d %q", pid, st)
	}
	if pid, st := TaskPID(out, "pause"); pid != 0 || st != "" {
		t.Errorf("prefix matched: %d %q", pid, st)
	}
}

func TestHasOverlayAndNoise(t *testing.T) {
	if !HasOverlay("nodev\tsysfs\nnodev\toverlay\n") || HasOverlay("nodev\tsysfs\n\text4\n") {
		t.Error("HasOverlay misread /proc/filesystems")
	}
	in := "time=\"x\" level=warning msg=\"DEPRECATION: The support for cgroup v1 is deprecated since containerd v2.2\"\nctr: real error\n"
	if got := dropNoise(in); got != "ctr: real error" {
		t.Errorf("dropNoise = %q", got)
	}
}

func TestSpecsAreCRIJSON(t *testing.T) {
	pod, err := PodSpecFor(PodOptions{Name: "p", UID: "u"}, "/l", "/kp/podu")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct{ UID string } `json:"metadata"`
		Linux    struct {
			CgroupParent    string `json:"cgroup_parent"`
			SecurityContext struct {
				NamespaceOptions struct{ Network int } `json:"namespace_options"`
			} `json:"security_context"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(pod, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.UID != "u" || p.Linux.CgroupParent != "/kp/podu" || p.Linux.SecurityContext.NamespaceOptions.Network != 2 {
		t.Errorf("pod spec %s", pod)
	}
	c, _ := ContainerSpecFor(ContainerOptions{Name: "app"}, false)
	if !strings.Contains(string(c), ImageName) {
		t.Errorf("container spec lacks the image: %s", c)
	}
}
