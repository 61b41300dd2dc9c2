// Package report provides the renderings of a verdict for people and
// machines: tables and schema-1 JSON for a terminal or a pipe, a
// self-contained HTML report with charts, JUnit XML for a CI system's test
// view, a fleet's waves side by side, and the comparison of a run with a
// baseline.
//
// The JSON outputs are described by the JSON Schemas in docs/schema/ at the
// root of the repository.
package report
