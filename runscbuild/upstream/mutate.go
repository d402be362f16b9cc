package upstream

import (
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

// mutantTimeout is a mutated tree's -test.timeout. A mutation that makes
// a test hang is caught either way (the binary fails, naming the test that
// was running); a shorter wait only spends less time on it.
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
	List   string `json:"list"`   // patches/NN-name/mutations
	SHA256 string `json:"sha256"` // of the list as read
	// Invalid are the list's blocks that were not run: not three lines,
	// a broken line identical to the original, a line not exactly once
	// in the tree. Each fails the list.
	Invalid []string `json:"invalid,omitempty"`
	Results []Mutant `json:"results"`
	Blocks  int      `json:"blocks"` // every block of the list, valid or not
	Timeout string   `json:"timeout"`
	Seconds float64  `json:"seconds"`
	Error   string   `json:"error,omitempty"` // the tree could not be mutated or restored
}

// Mutant is one mutation and its outcome.
type Mutant struct {
	runscbuild.Mutation
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
	mutations []runscbuild.Mutation // the well-formed blocks
	blocks    int                   // every block
	invalid   []string              // ParseMutations' errors, one a block
}

// mutate applies each mutation of list alone to the go tree as the row
// left it (the pull request alone, its unit tests passed), builds the
// mutated file's package and runs the row's unit tests as the row did;
// then puts the file back. A mutation is caught when a test fails that
// does not fail before any patch.
func (k *checker) mutate(label string, list *mutationList, r *Result) *Mutated {
	start := time.Now()
	m := &Mutated{List: list.name, SHA256: list.sha256, Blocks: list.blocks, Invalid: slices.Clone(list.invalid), Timeout: mutantTimeout.String()}
	defer func() { m.Seconds = time.Since(start).Seconds() }()
	// Every line must be in this tree exactly once before any is run.
	var run []runscbuild.Mutation
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
func (k *checker) mutant(label string, mu runscbuild.Mutation, pkgs []string) (res Mutant, err error) {
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
