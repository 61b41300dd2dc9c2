// Package parallel sets how many parallel tests a test binary runs at
// once, for packages whose tests spend most of their time waiting out
// compressed windows on the real clock rather than computing: go test's
// default, GOMAXPROCS, would run them mostly one after another on a small
// machine, a package holding one of go test's slots for the sum of its
// waits.
package parallel

import (
	"flag"
	"strconv"
)

// Raise sets -test.parallel to n unless the command line gave it. A
// package's TestMain calls it after flag.Parse, before m.Run.
func Raise(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
