package report

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteFiles makes dir and writes each named file into it with its writer,
// in name order.
func WriteFiles(dir string, files map[string]func(io.Writer) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		werr := files[name](f)
		if err := f.Close(); werr == nil {
			werr = err
		}
		if werr != nil {
			return fmt.Errorf("writing %s: %w", name, werr)
		}
	}
	return nil
}

// MarkdownTable renders a markdown table: the header line, the separator,
// then one line per row. A "|" in a cell is escaped so it cannot split the
// cell.
func MarkdownTable(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			fmt.Fprintf(&b, " %s |", strings.ReplaceAll(c, "|", `\|`))
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range rows {
		line(r)
	}
	return b.String()
}
