package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
)

// defaultShards is the one list of the case shards of the GitHub Actions
// workflow (ci/github/matrix.yml): its build job lists their names with
// -list-shards, each of its host jobs runs one with -shard (make
// matrix-shard), and TestShardsCoverEveryCase checks every case lands in
// one for every runtime and mode.
const defaultShards = "ci/github/shards.txt"

// shard is one line of the shard file: a name, the -run regexp of its
// cases and, optionally, a -skip regexp.
type shard struct {
	Name, Run, Skip string
}

// readShards parses a shard file: one shard a line, "name run [skip]"
// separated by blanks (a regexp has none, as for -run), # comments.
func readShards(path string) ([]shard, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []shard
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 || len(fields) > 3 {
			return nil, fmt.Errorf("%s:%d: want \"name run-regexp [skip-regexp]\", got %d fields", path, n, len(fields))
		}
		s := shard{Name: fields[0], Run: fields[1]}
		if len(fields) == 3 {
			s.Skip = fields[2]
		}
		if !regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`).MatchString(s.Name) {
			return nil, fmt.Errorf("%s:%d: shard name %q: lower-case letters, digits and dashes only (it names a job and an artifact)", path, n, s.Name)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s:%d: shard %q named twice", path, n, s.Name)
		}
		seen[s.Name] = true
		for _, re := range []string{s.Run, s.Skip} {
			if _, err := regexp.Compile(re); err != nil {
				return nil, fmt.Errorf("%s:%d: shard %s: %w", path, n, s.Name, err)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no shards", path)
	}
	return out, nil
}

// shardNames are the names of the shards in the file.
func shardNames(path string) ([]shard, []string, error) {
	shards, err := readShards(path)
	names := []string{}
	for _, s := range shards {
		names = append(names, s.Name)
	}
	return shards, names, err
}

// applyShard sets o's case selection from its -shard.
func applyShard(o *options) error {
	if o.shard == "" {
		return nil
	}
	if o.runRE != "" || o.skipRE != "" {
		return fmt.Errorf("-shard %s selects the cases: give it without -run and -skip", o.shard)
	}
	shards, names, err := shardNames(o.shards)
	if i := slices.Index(names, o.shard); err == nil && i >= 0 {
		o.runRE, o.skipRE = shards[i].Run, shards[i].Skip
	} else if err == nil {
		err = fmt.Errorf("-shard %q: not in %s (%s)", o.shard, o.shards, strings.Join(names, ", "))
	}
	return err
}
