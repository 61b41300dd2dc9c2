package report

import (
	"encoding/xml"
	"io"

	"github.com/connectbyjbrh/ratecheck/analyze"
)

// Suite is a named list of checks: one surface of a verdict, or a fleet.
type Suite struct {
	Name   string
	Checks []analyze.Check
}

// VerdictSuites returns a suite per surface of a verdict.
func VerdictSuites(rep *analyze.Report) []Suite {
	var out []Suite
	for _, s := range rep.Verdict.Surfaces {
		out = append(out, Suite{Name: s.Surface, Checks: s.Checks})
	}
	return out
}

// The JUnit XML elements CI systems read (Jenkins' junit-4 model, which
// GitLab, GitHub Actions reporters and others accept).
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Skipped  int         `xml:"skipped,attr"`
		Time     string      `xml:"time,attr"`
		Cases    []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Skipped   *junitMessage `xml:"skipped"`
		Error     *junitMessage `xml:"error"`
		Failure   *junitMessage `xml:"failure"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitMessage struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr,omitempty"`
		Text    string `xml:",chardata"`
	}
)

// JUnit writes suites as JUnit XML named name ("ratecheck verify"): a test
// case per check, failed or skipped as the check was, an inconclusive one
// as an error (the test could not be carried out: a CI system must not
// read it as a pass), its evidence as the message, so that a CI system's
// test view shows the verdict.
func JUnit(w io.Writer, name string, suites []Suite) error {
	out := junitSuites{Name: name}
	for _, s := range suites {
		js := junitSuite{Name: "ratecheck." + s.Name, Time: "0"}
		for _, c := range s.Checks {
			tc := junitCase{Name: c.Name, Classname: "ratecheck." + s.Name, Time: "0"}
			switch c.Verdict {
			case analyze.Fail:
				tc.Failure = &junitMessage{Message: c.Detail, Type: "check failed", Text: c.Detail}
				js.Failures++
			case analyze.Skip:
				tc.Skipped = &junitMessage{Message: c.Detail}
				js.Skipped++
			case analyze.Inconclusive:
				tc.Error = &junitMessage{Message: c.Detail, Type: "inconclusive", Text: c.Detail}
				js.Errors++
			default:
				tc.SystemOut = c.Detail
			}
			js.Cases = append(js.Cases, tc)
			js.Tests++
		}
		out.Suites = append(out.Suites, js)
		out.Tests, out.Failures, out.Errors, out.Skipped = out.Tests+js.Tests, out.Failures+js.Failures, out.Errors+js.Errors, out.Skipped+js.Skipped
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
