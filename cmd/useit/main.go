// Command useit writes each snippet of the README marked
// "<!-- use-it: NAME -->" to OUT/useit-NAME.sh, as written, for
// ci/commands/use-it.sh to run in a VM (make use-it).
//
//	useit [-readme README.md] [-out bin]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	readme := flag.String("readme", "README.md", "the file whose marked snippets to write")
	out := flag.String("out", "bin", "folder for useit-NAME.sh")
	flag.Parse()
	if err := run(*readme, *out); err != nil {
		fmt.Fprintf(os.Stderr, "useit: %v\n", err)
		os.Exit(1)
	}
}

func run(readme, out string) error {
	data, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	snippets, err := extract(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	for _, s := range snippets {
		if err := os.WriteFile(filepath.Join(out, "useit-"+s.name+".sh"), []byte(s.body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

type snippet struct{ name, body string }

var marker = regexp.MustCompile(`^<!-- use-it: ([a-z]+) -->$`)

// extract returns the marked snippets in order: each marker line is
// followed at once by a fenced sh block, and names are unique.
func extract(text string) ([]snippet, error) {
	lines := strings.Split(text, "\n")
	var out []snippet
	seen := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		name := m[1]
		if seen[name] {
			return nil, fmt.Errorf("line %d: a second snippet named %s", i+1, name)
		}
		seen[name] = true
		if i+1 >= len(lines) || lines[i+1] != "```sh" {
			return nil, fmt.Errorf("line %d: the use-it marker %s is not followed by a ```sh block", i+1, name)
		}
		var body strings.Builder
		j := i + 2
		for ; j < len(lines) && lines[j] != "```"; j++ {
			body.WriteString(lines[j] + "\n")
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: the snippet %s has no closing ```", i+1, name)
		}
		out = append(out, snippet{name, body.String()})
		i = j
	}
	return out, nil
}
