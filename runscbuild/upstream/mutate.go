package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runsc-cgroups/cgconform/runscbuild"
)

// A pull request's folder may hold a file mutationsFile: the ways to break
// its fix that its tests must catch. make upstream-check applies each one
// alone to the go tree of the pull request alone and runs its unit tests
// again; a mutation they do not catch fails the pull request.
//
//	runsc/container/state_file.go
//		err = os.Rename(tmp, path)
//		err = os.WriteFile(path, data, 0640)
//
//	runsc/sandbox/sandbox.go
//		return unix.Kill(pid, 0) != unix.ESRCH
//		return unix.Kill(pid, 0) == nil
//
// Blocks are separated by one blank line; each is exactly three lines: the
// file's path in the gVisor tree, the line as written in the patched tree
// (exact, tabs included; it must be there exactly once) and the broken line
// that replaces it. Blank lines at the end of the file are ignored.
const mutationsFile = "mutations"

// Mutation is one block of a mutation list.
type Mutation struct {
	Block  int    `json:"block"`  // 1-based, in file order
	File   string `json:"file"`   // the path in the gVisor tree, with slashes
	Line   string `json:"line"`   // the line as written in the patched tree
	Broken string `json:"broken"` // the line that replaces it
}

// parseMutations parses the mutation list name: the well-formed blocks, a
// message for each block that is not (or for a list with none), and how
// many blocks it has.
func parseMutations(name string, data []byte) (ms []Mutation, invalid []string, blocks int) {
	// Blank lines at the end are not blocks.
	text := strings.TrimRight(string(data), "\n")
	if strings.TrimSpace(text) == "" {
		return nil, []string{name + ": lists no mutation: remove the file, or give blocks of three lines (path, line, broken line)"}, 0
	}
	for i, block := range strings.Split(text, "\n\n") {
		n := i + 1
		bad := func(format string, args ...any) {
			invalid = append(invalid, fmt.Sprintf("%s: block %d: ", name, n)+fmt.Sprintf(format, args...))
		}
		lines := strings.Split(block, "\n")
		m := Mutation{Block: n, File: lines[0]}
		switch p := m.File; {
		case p == "":
			bad("starts with a blank line: blocks are separated by exactly one blank line")
		case len(lines) != 3:
			bad("has %d lines (%q...), want 3: the file, the line as written, the broken line", len(lines), p)
		case path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsAny(p, " \t\\"):
			bad("first line %q is not a clean relative path in the gVisor tree (e.g. runsc/container/container.go)", p)
		case lines[2] == lines[1]:
			bad("the broken line is the line itself (%q): it breaks nothing", lines[1])
		default:
			m.Line, m.Broken = lines[1], lines[2]
			ms = append(ms, m)
		}
	}
	return ms, invalid, len(ms) + len(invalid)
}

// Count is how many lines of src are exactly m.Line.
func (m Mutation) Count(src []byte) int {
	n := 0
	for _, l := range bytes.Split(src, []byte("\n")) {
		if string(l) == m.Line {
			n++
		}
	}
	return n
}

// Apply returns src with m's line replaced by its broken line. The line
// must be in src exactly once.
func (m Mutation) Apply(src []byte) ([]byte, error) {
	if n := m.Count(src); n != 1 {
		return nil, fmt.Errorf("%s has the line %q %d times, want exactly once", m.File, m.Line, n)
	}
	lines := bytes.Split(src, []byte("\n"))
	for i, l := range lines {
		if string(l) == m.Line {
			lines[i] = []byte(m.Broken)
		}
	}
	return bytes.Join(lines, []byte("\n")), nil
}

// readMutationLists reads every pull request's mutation list, if any. A
// list with malformed blocks is kept with its errors: they fail its pull
// request, not the check.
func readMutationLists(s *runscbuild.Series) (map[string]*mutationList, error) {
	out := map[string]*mutationList{}
	for _, pr := range s.All() {
		data, err := os.ReadFile(filepath.Join(pr.Dir, mutationsFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		l := &mutationList{name: path.Join(filepath.Base(s.Dir), pr.Name, mutationsFile), sha256: hex.EncodeToString(sum[:])}
		l.mutations, l.invalid, l.blocks = parseMutations(l.name, data)
		out[pr.Name] = l
	}
	return out, nil
}

// mutantTimeout is a mutated tree's -test.timeout: a hang is caught either
// way, a shorter wait spends less time on it.
const mutantTimeout = 3 * time.Minute

// The outcomes of a mutation.
const (
	Caught         = "caught"
	Survived       = "SURVIVED"
	DoesNotCompile = "does not compile"
	Invalid        = "invalid"
)

// Mutated is what a pull request's mutation list did to its tests.
type Mutated struct {
	List    string   `json:"list"`              // patches/NN-name/mutations
	SHA256  string   `json:"sha256"`            // of the list as read
	Invalid []string `json:"invalid,omitempty"` // blocks not run (malformed, line not once in the tree): each fails the list
	Results []Mutant `json:"results"`
	Blocks  int      `json:"blocks"` // every block of the list, valid or not
	Timeout string   `json:"timeout"`
	Seconds float64  `json:"seconds"`
	Error   string   `json:"error,omitempty"` // the tree could not be mutated or restored
}

// Mutant is one mutation and its outcome.
type Mutant struct {
	Mutation
	Outcome  string   `json:"outcome"`             // Caught, Survived, DoesNotCompile
	CaughtBy []string `json:"caught_by,omitempty"` // package.Test: the tests that failed
	Note     string   `json:"note,omitempty"`      // the compiler's error
	Seconds  float64  `json:"seconds"`
}

// Caught counts the mutations the tests caught.
func (m *Mutated) Caught() int {
	n := 0
	for _, r := range m.Results {
		if r.Outcome == Caught {
			n++
		}
	}
	return n
}

// Step is the mutations step: it passes when every block of the list is
// valid and caught.
func (m *Mutated) Step() Step {
	s := Step{Ran: true, OK: m.Error == "" && len(m.Invalid) == 0 && m.Caught() == m.Blocks}
	parts := []string{fmt.Sprintf("caught %d of %d", m.Caught(), m.Blocks)}
	var survived, broken []string
	for _, r := range m.Results {
		switch r.Outcome {
		case Survived:
			survived = append(survived, fmt.Sprintf("block %d %s %q", r.Block, r.File, strings.TrimSpace(r.Broken)))
		case DoesNotCompile:
			broken = append(broken, fmt.Sprintf("block %d %s %q: %s", r.Block, r.File, strings.TrimSpace(r.Broken), r.Note))
		}
	}
	if len(survived) > 0 {
		parts = append(parts, "survived: "+strings.Join(survived, ", "))
	}
	if len(broken) > 0 {
		parts = append(parts, "does not compile: "+strings.Join(broken, ", "))
	}
	if len(m.Invalid) > 0 {
		parts = append(parts, "invalid: "+strings.Join(m.Invalid, "; "))
	}
	if m.Error != "" {
		parts = append(parts, m.Error)
	}
	s.Note = strings.Join(parts, "; ")
	return s
}

// mutationList is a pull request's list as read when the check began.
type mutationList struct {
	name      string // patches/NN-name/mutations
	sha256    string
	mutations []Mutation // the well-formed blocks
	blocks    int        // every block
	invalid   []string   // parseMutations' messages
}

// mutate applies each mutation of list alone to the go tree as the row
// left it, builds the mutated package and runs the row's unit tests again,
// then puts the file back. It is caught when a test fails that does not
// fail before any patch.
func (k *checker) mutate(label string, list *mutationList, r *Result) *Mutated {
	start := time.Now()
	m := &Mutated{List: list.name, SHA256: list.sha256, Blocks: list.blocks, Invalid: slices.Clone(list.invalid), Timeout: mutantTimeout.String()}
	defer func() { m.Seconds = time.Since(start).Seconds() }()
	// Every line must be in this tree exactly once before any is run.
	var run []Mutation
	for _, mu := range list.mutations {
		src, err := os.ReadFile(filepath.Join(k.goTree, filepath.FromSlash(mu.File)))
		switch {
		case err != nil:
			m.Invalid = append(m.Invalid, fmt.Sprintf("%s: block %d: %s is not in the go tree of this pull request (%s)", list.name, mu.Block, mu.File, r.GoTree))
		case mu.Count(src) != 1:
			m.Invalid = append(m.Invalid, fmt.Sprintf("%s: block %d: %s has the line %q %d times in the go tree of this pull request (%s), want exactly once", list.name, mu.Block, mu.File, mu.Line, mu.Count(src), r.GoTree))
		default:
			run = append(run, mu)
		}
	}
	sort.Strings(m.Invalid)
	for _, inv := range m.Invalid {
		fmt.Fprintf(k.Log, "upstream-check: %s: mutation list: %s\n", label, inv)
	}
	if k.Lock != nil {
		unlock, err := k.Lock()
		if err != nil {
			m.Error = "build lock: " + err.Error()
			return m
		}
		defer unlock()
	}
	for _, mu := range run {
		res, err := k.mutant(fmt.Sprintf("%s mutation %d", label, mu.Block), mu, r.Packages)
		if err != nil {
			m.Error = fmt.Sprintf("block %d: %v", mu.Block, err)
			fmt.Fprintf(k.Log, "upstream-check: %s: mutations stopped: %s\n", label, m.Error)
			return m
		}
		m.Results = append(m.Results, res)
	}
	return m
}

// mutant runs one mutation. An error means the tree could not be mutated
// or was not restored: the remaining mutations cannot be trusted.
func (k *checker) mutant(label string, mu Mutation, pkgs []string) (res Mutant, err error) {
	start := time.Now()
	res.Mutation = mu
	file := filepath.Join(k.goTree, filepath.FromSlash(mu.File))
	info, err := os.Stat(file)
	if err != nil {
		return res, err
	}
	orig, err := os.ReadFile(file)
	if err != nil {
		return res, err
	}
	broken, err := mu.Apply(orig)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(file, broken, info.Mode().Perm()); err != nil {
		return res, err
	}
	defer func() {
		if werr := os.WriteFile(file, orig, info.Mode().Perm()); werr != nil && err == nil {
			err = fmt.Errorf("restoring %s: %w", mu.File, werr)
			return
		}
		if st, serr := gitIn(k.goTree, "status", "--porcelain", "--untracked-files=no"); err == nil && (serr != nil || strings.TrimSpace(st) != "") {
			err = fmt.Errorf("the go tree is not as the row left it after restoring %s: %v %s", mu.File, serr, st)
		}
		res.Seconds = time.Since(start).Seconds()
		fmt.Fprintf(k.Log, "upstream-check: %s: %s %s: %s%s (%.0fs)\n", label, mu.File, strings.TrimSpace(mu.Broken), res.Outcome, by(res), res.Seconds)
	}()
	fmt.Fprintf(k.Log, "upstream-check: %s: %s: %q -> %q\n", label, mu.File, mu.Line, mu.Broken)
	// The mutated package itself, then the row's tests as the row ran them.
	if _, err := goIn(k.goTree, "build", "./"+path.Dir(mu.File)); err != nil {
		res.Outcome, res.Note = DoesNotCompile, goError(err)
		return res, nil
	}
	s := k.test(label, pkgs, mutantTimeout)
	if k.hard {
		res.Outcome, res.Note = DoesNotCompile, s.Note
		return res, nil
	}
	res.CaughtBy = failures(k.failed, k.baseFailures)
	res.Outcome = Survived
	if len(res.CaughtBy) > 0 {
		res.Outcome = Caught
	}
	return res, nil
}

func by(r Mutant) string {
	switch {
	case len(r.CaughtBy) > 0:
		return " by " + strings.Join(r.CaughtBy, " ")
	case r.Note != "":
		return ": " + r.Note
	}
	return ""
}
