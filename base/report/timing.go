package report

// Daemon is one start of a daemon a case x context x runtime needed: the
// containerd of a client context, the engine of a docker or podman context
// (dockerd, and its restart by a restart-daemon step), the kubelet of
// kubelet-static. DurationMS runs from the start command to the moment the
// daemon served (its socket answered, or the kubelet ran its static pod).
type Daemon struct {
	Name       string `json:"name"`
	DurationMS int64  `json:"durationMs"`
	// Error is why the start failed, if it did.
	Error string `json:"error,omitempty"`
}

// TrialChecks counts the checks of the trial whose step records end steps:
// its check steps that ran (a step of action check, not skipped for the
// mode or context) and its final nothing-left check (the record "cleanup",
// which ends every trial). The records of the trial begin after the
// previous "cleanup" record. The harness adds the count to Result.Checks
// after each trial, before it drops the records of a passing trial.
func TrialChecks(steps []Step) int {
	n := 0
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.ID == CleanupStep {
			if i < len(steps)-1 {
				break // the previous trial's
			}
			n++
			continue
		}
		if s.Do == "check" && s.Skipped == "" {
			n++
		}
	}
	return n
}

// CleanupStep is the ID of the final nothing-left check of a trial (a step
// ID the case files may not use).
const CleanupStep = "cleanup"
