package clients

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// SliceDir expands a systemd slice name into its cgroup directory:
// "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" is the root.
func SliceDir(slice string) (string, error) {
	name, ok := strings.CutSuffix(slice, ".slice")
	if !ok || strings.Contains(slice, "/") {
		return "", fmt.Errorf("%q is not a systemd slice name", slice)
	}
	if name == "-" {
		return "/", nil
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
		return "", fmt.Errorf("%q is not a valid slice name", slice)
	}
	parts := strings.Split(name, "-")
	dir := ""
	for i := range parts {
		dir += "/" + strings.Join(parts[:i+1], "-") + ".slice"
	}
	return dir, nil
}

// KubeletParent is the cgroup_parent the kubelet gives a BestEffort pod:
// cgroupfs "<root>/kubepods/besteffort/pod<uid>", systemd
// "kubepods-besteffort-pod<uid with _ for ->.slice". root is the kubelet's
// --cgroup-root ("" or "/" for the default).
func KubeletParent(systemd bool, root, uid string) string {
	if systemd {
		return "kubepods-besteffort-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	}
	return path.Join("/", root, "kubepods", "besteffort", "pod"+uid)
}

// inspectInfo is the part of `crictl inspect[p] -o json` read here.
type inspectInfo struct {
	Status struct {
		ID     string            `json:"id"`
		State  string            `json:"state"`
		Labels map[string]string `json:"labels"`
	} `json:"status"`
	Info struct {
		Pid       int    `json:"pid"`
		SandboxID string `json:"sandboxID"`
	} `json:"info"`
}

// ParseContainerPod reads a container's pod sandbox ID and pod UID from
// crictl inspect -o json.
func ParseContainerPod(out string) (sandboxID, podUID string, err error) {
	var in inspectInfo
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		return "", "", fmt.Errorf("parsing crictl inspect output: %w", err)
	}
	sandboxID, podUID = in.Info.SandboxID, in.Status.Labels["io.kubernetes.pod.uid"]
	if sandboxID == "" || podUID == "" {
		return "", "", fmt.Errorf("crictl inspect names no sandbox ID or pod UID: %.300s", out)
	}
	return sandboxID, podUID, nil
}

// ParseInspect reads the PID and state from the JSON `crictl inspect -o
// json` or `crictl inspectp -o json` prints.
func ParseInspect(out string) (pid int, state string, err error) {
	var in inspectInfo
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		return 0, "", fmt.Errorf("parsing crictl inspect output: %w", err)
	}
	if in.Status.ID == "" {
		return 0, "", fmt.Errorf("crictl inspect output has no status.id: %.200s", out)
	}
	return in.Info.Pid, in.Status.State, nil
}

// ParseID reads the container ID a client printed (64 hex digits; the
// last such field): crictl runp/create may warn before it, and Debian's
// Docker 20.10 CLI may log "error waiting for container: context
// canceled" after the ID of a detached run and still exit 0
// (docker/cli#5043).
func ParseID(out string) (string, error) {
	f := strings.Fields(out)
	for i := len(f) - 1; i >= 0; i-- {
		if len(f[i]) == 64 && strings.Trim(f[i], "0123456789abcdef") == "" {
			return f[i], nil
		}
	}
	return "", fmt.Errorf("expected a 64-digit container ID, got %q", out)
}

// TaskPID reads the PID of task id from `ctr task ls` output (columns
// TASK PID STATUS); 0 when the task is not listed.
func TaskPID(out, id string) (pid int, status string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			fmt.Sscanf(f[1], "%d", &pid)
			return pid, f[2]
		}
	}
	return 0, ""
}
