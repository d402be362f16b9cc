package matrixreport

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// resultLine is cgconform's progress line for a finished case:
// "FAIL case  [context]  runtime  12.3s reason…".
var resultLine = regexp.MustCompile(`^(pass|FAIL|xdiv|skip)\s+(\S+)\s+\[([^\]]+)\]\s+(\S+)\s+([0-9.]+)s\s?(.*)$`)

// ParseConsole recovers the results a VM printed before it was killed or
// crashed, so a mode that ran out of time still shows what it did.
func ParseConsole(r io.Reader, mode string) []Record {
	var recs []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		m := resultLine.FindStringSubmatch(strings.TrimRight(sc.Text(), "\r"))
		if m == nil {
			continue
		}
		secs, _ := strconv.ParseFloat(m[5], 64)
		outcome := map[string]string{"pass": Pass, "FAIL": Fail, "xdiv": Divergence, "skip": Skip}[m[1]]
		recs = append(recs, Record{
			Case:    m[2] + " [" + m[3] + "]",
			Runtime: m[4],
			Mode:    mode,
			Outcome: outcome,
			Reason:  strings.TrimSpace(m[6]),
			Seconds: secs,
		})
	}
	return recs
}
