// Package archtest holds blast's import rule as a test: which packages
// may import which, written as data (the layers, the test helpers and the
// outside modules each package may use) in imports_test.go. It has no
// code; `go test ./internal/archtest` reads every Go file of the module,
// for every OS and build tag, and fails on an import the rule does not
// allow. A new package, or a new edge that breaks no layer, is placed
// there too.
package archtest
