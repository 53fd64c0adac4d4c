package safetext

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"eth0", "eth0"},
		{"a\tb\nc", "a\tb\nc"},
		{"red\x1b[31mALERT", `red\x1b[31mALERT`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`},
		{"cr\rbs\b", `cr\x0dbs\x08`},
		{"del\x7f", `del\x7f`},
		{"csi\u009b31m", `csi\u009b31m`},
		{"bad\xff\xfe", `bad\xff\xfe`},
		{"rlo\u202etxt", `rlo\u202etxt`},
		{"tag\U000e0001", `tag\U000e0001`},
		{"Δ late_collisions", "Δ late_collisions"},
		{"", ""},
	} {
		if got := Escape(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := Escape(Escape(tc.in)); got != tc.want {
			t.Errorf("Escape(Escape(%q)) = %q, want %q (idempotent)", tc.in, got, tc.want)
		}
	}
	var b bytes.Buffer
	w := Writer(Writer(&b))
	if n, err := w.Write([]byte("x\x1b[2Jy\n")); n != 7 || err != nil || b.String() != "x\\x1b[2Jy\n" {
		t.Errorf("Writer: wrote %d, %v: %q", n, err, b.String())
	}
}

// TestEscapeJSON: what encoding/json leaves raw and a terminal acts on is
// escaped, and the document still means the same.
func TestEscapeJSON(t *testing.T) {
	in := map[string]string{"mac": "a\x1b[31m\x7f\u009b\u202e\U000e0001Δ\tz"}
	raw, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(raw)
	for _, c := range []string{"\x1b", "\x7f", "\u009b", "\u202e", "\U000e0001"} {
		if bytes.Contains(got, []byte(c)) {
			t.Errorf("JSON left %q raw: %s", c, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["mac"] != in["mac"] {
		t.Errorf("JSON changed the document: %s: %q, %v", got, back["mac"], err)
	}
	if plain := []byte(`{"a": "b"}`); !bytes.Equal(JSON(plain), plain) {
		t.Errorf("JSON of a clean document changed it")
	}
}
