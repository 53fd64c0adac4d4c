package ttcp

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writes records each Write it gets, as a string.
type writes struct {
	got []string
	err error // returned by every Write when set
}

func (w *writes) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.got = append(w.got, string(p))
	return len(p), nil
}

func TestBlockWriter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		reads []string // what the data path hands in, one Write each
		want  []string // what reaches the output, one write each
	}{
		{"short reads fill a block", 4, []string{"ab", "c", "d", "efgh", "i"}, []string{"abcd", "efgh", "i"}},
		{"a read of two blocks and a half", 4, []string{"abcdefghij", "kl"}, []string{"abcd", "efgh", "ijkl"}},
		{"a held part completed by a long read", 4, []string{"abc", "defghijk"}, []string{"abcd", "efgh", "ijk"}},
		{"whole blocks only", 3, []string{"abc", "def"}, []string{"abc", "def"}},
		{"less than a block", 8, []string{"ab", "cd"}, []string{"abcd"}},
		{"nothing", 8, nil, nil},
		{"empty reads", 2, []string{"", "a", "", "b"}, []string{"ab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &writes{}
			b := &blockWriter{w: out, n: tc.n}
			for _, r := range tc.reads {
				if n, err := b.Write([]byte(r)); n != len(r) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", r, n, err)
				}
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.got); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if got, want := strings.Join(out.got, ""), strings.Join(tc.reads, ""); got != want {
				t.Errorf("bytes out %q, in %q", got, want)
			}
		})
	}
}

func TestBlockWriterErrors(t *testing.T) {
	broken := errors.New("broken pipe")
	out := &writes{err: broken}
	b := &blockWriter{w: out, n: 2}
	if _, err := b.Write([]byte("a")); err != nil {
		t.Fatalf("a held byte wrote: %v", err)
	}
	if _, err := b.Write([]byte("b")); !errors.Is(err, broken) {
		t.Errorf("completing a block: error %v, want %v", err, broken)
	}
	b = &blockWriter{w: out, n: 2}
	b.Write([]byte("a"))
	if err := b.Flush(); !errors.Is(err, broken) {
		t.Errorf("Flush: error %v, want %v", err, broken)
	}
}
