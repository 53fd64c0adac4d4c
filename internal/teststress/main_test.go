package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	in := `{"Action":"run","Package":"p/a","Test":"TestX"}
{"Action":"output","Package":"p/a","Test":"TestX","Output":"=== RUN TestX\n"}
{"Action":"output","Package":"p/a","Test":"TestX/sub","Output":"    x_test.go:9: want 3, got 4\n"}
{"Action":"fail","Package":"p/a","Test":"TestX/sub","Elapsed":0.5}
{"Action":"pass","Package":"p/a","Test":"TestX/ok","Elapsed":0.1}
{"Action":"fail","Package":"p/a","Test":"TestX","Elapsed":0.6}
{"Action":"pass","Package":"p/a","Test":"TestY","Elapsed":0}
{"Action":"skip","Package":"p/a","Test":"TestZ","Elapsed":0}
{"Action":"fail","Package":"p/a","Elapsed":1}
{"Action":"output","Package":"p/b","Output":"panic: boom\n"}
{"Action":"fail","Package":"p/b","Elapsed":2}
not json
{"Action":"pass","Package":"p/c","Test":"TestW","Elapsed":0}
`
	fails, tests := parse(3, strings.NewReader(in))
	want := []failure{
		{3, "p/a", "TestX/sub", 0.5, "    x_test.go:9: want 3, got 4\n"},
		{3, "p/b", "(package)", 2, "panic: boom\n"},
	}
	if diff := cmp.Diff(want, fails, cmp.AllowUnexported(failure{})); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	if tests != 6 {
		t.Errorf("%d tests, want 6", tests)
	}
}
