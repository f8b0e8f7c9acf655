package testutil

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// Parallel is how many tests a package whose TestMain calls Main runs at
// once when go test is not given -parallel (its default is GOMAXPROCS, 2
// on the CI machines). Those tests mostly wait: on PostgreSQL, on fsync,
// on Chromium, on a background job they poll for. So more of them at
// once than there are cores keeps the cores busy; measured in
// docs/decisions.md ("Tests run four at a time").
const Parallel = 4

// Main runs a package's tests, Parallel at a time unless -parallel says
// otherwise (go test passes -test.parallel to the binary only when given).
// The tests that run in parallel are those of ForEachEngine and those that
// call t.Parallel themselves.
func Main(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", strconv.Itoa(Parallel)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
