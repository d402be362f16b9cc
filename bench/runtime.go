package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runsc-cgroups/cgconform/harness/runner"
)

// Runtime is the harness's runtime type (runsc-stock, runsc-patched with
// its Flags), under the name the scenarios use.
type Runtime = runner.Runtime

// Runner starts runtime commands, each with its own stdio files: runsc sets
// O_NONBLOCK on the stdio it is handed and a detached sandbox keeps it, so
// sharing our stdout or a pipe would break us or make Wait hang.
type Runner struct {
	// LogDir receives NNNNNN-<runtime>-<subcommand>.{out,err}.
	LogDir string
	// Timeout bounds one command; it is killed (by its PID) past it.
	Timeout time.Duration
	// KeepLogs keeps the files of commands that succeeded too.
	KeepLogs bool
	seq      atomic.Int64
}

// Result is one runtime command that ran to completion.
type Result struct {
	Args    []string `json:"args"`
	Exit    int      `json:"exit"`
	Seconds float64  `json:"seconds"`
	// CPUSeconds is the command's user+system time (its own process and
	// the children it waited for).
	CPUSeconds float64 `json:"cpuSeconds"`
	// Stderr is the tail of the command's stderr (kept when it failed).
	Stderr string `json:"stderr,omitempty"`
	Log    string `json:"log,omitempty"`
}

// RunError is a runtime command that failed: it exited non-zero, could not
// start, or timed out. It carries the runtime's own stderr.
type RunError struct {
	Runtime string
	Result  Result
	Err     error // set when the command did not exit on its own
}

func (e *RunError) Error() string {
	what := fmt.Sprintf("exit %d", e.Result.Exit)
	if e.Err != nil {
		what = e.Err.Error()
	}
	msg := fmt.Sprintf("%s %s: %s after %.3fs", e.Runtime, strings.Join(e.Result.Args, " "), what, e.Result.Seconds)
	if s := strings.TrimSpace(e.Result.Stderr); s != "" {
		msg += "; stderr: " + s
	}
	if e.Result.Log != "" {
		msg += " (full stderr: " + e.Result.Log + ")"
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

// stderrTail bounds how much of a runtime's stderr goes into a report.
const stderrTail = 2048

// Run runs rt with args and returns how long it took. A non-zero exit, a
// failure to start or a timeout is a *RunError, never a timing.
func (r *Runner) Run(ctx context.Context, rt Runtime, args ...string) (Result, error) {
	res, _, _, err := r.Output(ctx, rt, args...)
	return res, err
}

// Output is Run that also returns what the command wrote to stdout and
// stderr.
func (r *Runner) Output(ctx context.Context, rt Runtime, args ...string) (Result, []byte, []byte, error) {
	full := append(append([]string(nil), rt.Flags...), args...)
	res := Result{Args: full, Exit: -1}
	n := r.seq.Add(1)
	sub := "run"
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "/") {
			sub = a
			break
		}
	}
	if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
		return res, nil, nil, fmt.Errorf("making the log folder for runtime output: %w", err)
	}
	base := filepath.Join(r.LogDir, fmt.Sprintf("%06d-%s-%s", n, filepath.Base(rt.Name), sub))
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		return res, nil, nil, err
	}
	defer stdin.Close()
	stdout, err := os.Create(base + ".out")
	if err != nil {
		return res, nil, nil, fmt.Errorf("creating a stdout file for the runtime: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(base + ".err")
	if err != nil {
		return res, nil, nil, fmt.Errorf("creating a stderr file for the runtime: %w", err)
	}
	defer stderr.Close()

	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, rt.Path, full...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	// Killing a hung runtime kills that one PID; files need no WaitDelay.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }

	start := time.Now()
	err = cmd.Run()
	res.Seconds = time.Since(start).Seconds()
	if ps := cmd.ProcessState; ps != nil {
		res.Exit = ps.ExitCode()
		res.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	out, _ := os.ReadFile(base + ".out")
	errOut, _ := os.ReadFile(base + ".err")
	if err == nil {
		if !r.KeepLogs {
			os.Remove(base + ".out")
			os.Remove(base + ".err")
		}
		return res, out, errOut, nil
	}
	res.Stderr = string(errOut[max(len(errOut)-stderrTail, 0):])
	res.Log = base + ".err"
	rerr := &RunError{Runtime: rt.Name, Result: res}
	var exitErr *exec.ExitError
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		rerr.Err = fmt.Errorf("timed out after %v and was killed: %w", timeout, cctx.Err())
	case ctx.Err() != nil:
		rerr.Err = fmt.Errorf("interrupted: %w", ctx.Err())
	case errors.As(err, &exitErr) && res.Exit >= 0:
		// A plain non-zero exit: Error() shows the code and stderr.
	default:
		rerr.Err = err
	}
	return rerr.Result, out, errOut, rerr
}
