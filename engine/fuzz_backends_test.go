package engine_test

import (
	"strings"
	"testing"

	"github.com/blastnet/blast/engine"
	_ "github.com/blastnet/blast/engine/backends"
)

// FuzzBackendOptions: the option strings of --backend NAME:OPTS (and of
// a peer's parameters), against the options every registered backend
// declares. Whatever is written, parsing and configuring never panic and
// refuse in one line; what parses renders (as --backend takes it) to a
// string that parses to the same options.
func FuzzBackendOptions(f *testing.F) {
	for _, s := range []string{"", "batch=8,gso", "gso,gro", "batch=64,gso,gro", "zc,batch=4096", "multishot",
		"queues=2,threads=2,zc", "dstmac=02:00:00:00:00:01", "file=/tmp/a,b.dat", `file=/tmp/x\,gso`, "file=/etc/hostname",
		"file=a\\", "batch=0", "batch=1048577", "bogus", "file=\n", ",,", "=", " gso", "gso=1"} {
		for i := range 3 {
			f.Add(uint8(i*5), s)
		}
	}
	names := engine.Names()
	if len(names) == 0 {
		f.Fatal("no backend registered")
	}
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		name := names[int(which)%len(names)]
		b, err := engine.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		decls := engine.OptionsOf(b)
		o, err := engine.ParseOptions(name, decls, s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("%s %q: error of more than one line: %q", name, s, err)
			}
			return
		}
		for _, d := range decls {
			if d.Kind == engine.Count && o.Has(d.Name) {
				if n := o.Count(d.Name, 0); n < 1 || n > 1<<20 {
					t.Errorf("%s %q: %s=%d", name, s, d.Name, n)
				}
			}
		}
		spelled := engine.Spelled(name, o)
		n2, s2, _ := strings.Cut(spelled, ":")
		if n2 != name {
			t.Fatalf("%s %q spelled %q", name, s, spelled)
		}
		back, err := engine.ParseOptions(name, decls, s2)
		if err != nil {
			t.Fatalf("%s %q spelled %q, which does not parse: %v", name, s, spelled, err)
		}
		for _, d := range decls {
			if back.Has(d.Name) != o.Has(d.Name) || back.Text(d.Name) != o.Text(d.Name) {
				t.Errorf("%s %q: %s is %q, spelled %q it reads back as %q", name, s, d.Name, o.Text(d.Name), spelled, back.Text(d.Name))
			}
		}
		if _, _, err := engine.Configure(b, s); err != nil && strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("%s %q: Configure: error of more than one line: %q", name, s, err)
		}
	})
}
