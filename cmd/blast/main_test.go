package main

import "testing"

// The same mistake is the same exit status in every mode: a command that
// does not exist is a usage error, also after help.
func TestUnknownCommandIsUsage(t *testing.T) {
	for _, args := range [][]string{{"nonsense"}, {"help", "nonsense"}, {"--help", "nonsense"}} {
		code, out, errs := runArgs(t, "blast", args...)
		if code != exitUsage || out != "" {
			t.Errorf("blast %v: exit %d, stdout %q; want exit %d and nothing on stdout", args, code, out, exitUsage)
		}
		if errs == "" || errs[len(errs)-1] != '\n' || len(errs) > 100 {
			t.Errorf("blast %v: stderr %q, want one short line", args, errs)
		}
	}
	if code, out, _ := runArgs(t, "blast", "help", "server"); code != exitOK || out == "" {
		t.Errorf("blast help server: exit %d, stdout %q", code, out)
	}
}
