// Package profiles provides the shipped scenario files, embedded, so that
// verify and fleet can reuse errors.yaml's failure-table probes from any
// working directory. The format is described in README.md beside them.
package profiles
