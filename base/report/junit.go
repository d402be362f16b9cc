package report

import (
	"encoding/xml"
	"io"
	"strconv"
)

// Errored is an outcome only junit.xml knows: the test gave no result at
// all (a matrix mode whose VM sent no report, a record without outcome).
const Errored Outcome = "error"

// JUnitSuite is one <testsuite> of a junit.xml. cgconform writes one per
// runtime on its host, the VM matrix one per host mode.
type JUnitSuite struct {
	Name string
	// Seconds is the suite's time; 0 means the sum of its tests' times.
	Seconds float64
	Tests   []JUnitTest
}

// JUnitTest is one <testcase>. Its Outcome picks the element it gets:
// Fail a <failure>, Errored an <error>, Skip a <skipped>, and Divergence a
// <skipped> whose message starts with "expected divergence:", so CI shows
// it without counting it as a pass. Any other outcome passes.
type JUnitTest struct {
	Name      string
	Classname string
	Seconds   float64
	Outcome   Outcome
	// Message is the one-line message: what failed, why the test was
	// skipped, or the reason the case gives for a divergence.
	Message string
	// Detail is the text of a failure or error, and the system-out of a
	// skipped or diverging test.
	Detail string
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes suites as a junit.xml, counting the tests, failures,
// errors and skips of each. Times are in seconds with three decimals.
func WriteJUnit(w io.Writer, suites []JUnitSuite) error {
	var out junitSuites
	for _, s := range suites {
		js := junitSuite{Name: s.Name, Tests: len(s.Tests)}
		var sum float64
		for _, t := range s.Tests {
			c := junitCase{Name: t.Name, Classname: t.Classname, Time: seconds(t.Seconds)}
			switch t.Outcome {
			case Fail:
				js.Failures++
				c.Failure = &junitMessage{Message: t.Message, Body: t.Detail}
			case Errored:
				js.Errors++
				c.Error = &junitMessage{Message: t.Message, Body: t.Detail}
			case Skip:
				js.Skipped++
				c.Skipped = &junitMessage{Message: t.Message}
				c.SystemOut = t.Detail
			case Divergence:
				js.Skipped++
				c.Skipped = &junitMessage{Message: "expected divergence: " + t.Message}
				c.SystemOut = t.Detail
			}
			sum += t.Seconds
			js.Cases = append(js.Cases, c)
		}
		if s.Seconds == 0 {
			s.Seconds = sum
		}
		js.Time = seconds(s.Seconds)
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(s float64) string {
	return strconv.FormatFloat(s, 'f', 3, 64)
}
