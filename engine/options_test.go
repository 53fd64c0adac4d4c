package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testDecls = []Option{
	{Name: "batch", Kind: Count, Default: "64", Help: "messages per call"},
	{Name: "gso", Kind: Flag, Default: "off", Help: "segmentation offload"},
	{Name: "file", Kind: Text, Default: "the pattern", Help: "file to send"},
	{Name: "dstmac", Kind: MAC, Default: "the neighbour's", Help: "destination MAC"},
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "batch=8,gso", want: "batch=8,gso"},
		{in: "gso,batch=8", want: "batch=8,gso"},
		{in: "file=/tmp/a,b.dat", want: `file=/tmp/a\,b.dat`},
		{in: "file=/tmp/a,b.dat,gso", want: `gso,file=/tmp/a\,b.dat`},
		{in: `file=/tmp/x\,gso`, want: `file=/tmp/x\,gso`},
		{in: `dstmac=02:00:00:00:00:01,file=a\`, want: `file=a\\,dstmac=02:00:00:00:00:01`},
		{in: `file=a\b\\,gso`, want: `gso,file=a\\b\\`},
		{in: "dstmac=02:AA:00:00:00:01", want: "dstmac=02:aa:00:00:00:01"},
		{in: "batch=0", err: `backend t option "batch=0": batch takes a count from 1 to 1048576`},
		{in: "gso=1", err: `backend t option "gso=1": gso takes no value`},
		{in: "file=", err: `backend t option "file=": file takes a path`},
		{in: "dstmac=nope", err: `backend t option "dstmac=nope": dstmac takes an Ethernet address such as 02:00:00:00:00:01`},
		{in: "fast", err: `backend t has no option "fast": it takes batch=N, gso, file=PATH, dstmac=MAC (see 'blast backends')`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			o, err := ParseOptions("t", testDecls, tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v, want error %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, o.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ParseOptions("readwrite", nil, "bogus"); err == nil || err.Error() != "backend readwrite takes no options (given: bogus)" {
		t.Errorf("options for a backend without any: got %v", err)
	}
}

func TestOptionsValues(t *testing.T) {
	o, err := ParseOptions("t", testDecls, "batch=16,file=/tmp/a,b")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{o.Count("batch", 64), o.Flag("gso"), o.Text("file"), o.Has("dstmac")}
	want := []any{16, false, "/tmp/a,b", false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// FuzzParseOptions: whatever a user or a peer writes, parsing never
// panics, and what it accepts renders to a string that parses back to
// the same options.
func FuzzParseOptions(f *testing.F) {
	for _, s := range []string{"", "batch=8,gso", "file=/a,b,gso", `file=x\,y`, "dstmac=02:00:00:00:00:01", ",,", "batch=99999999999999999999", "=", "file=\\", `dstmac=02:00:00:00:00:01,file=a\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOptions("t", testDecls, s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error of more than one line: %q", err)
			}
			return
		}
		back, err := ParseOptions("t", testDecls, o.String())
		if err != nil {
			t.Fatalf("%q parsed, rendered as %q, which does not parse: %v", s, o.String(), err)
		}
		if back.String() != o.String() {
			t.Errorf("%q: rendered %q, then %q", s, o.String(), back.String())
		}
		for _, d := range testDecls {
			if back.Has(d.Name) != o.Has(d.Name) || back.Text(d.Name) != o.Text(d.Name) {
				t.Errorf("%q: %s is %q, rendered as %q it reads back as %q", s, d.Name, o.Text(d.Name), o.String(), back.Text(d.Name))
			}
		}
	})
}
