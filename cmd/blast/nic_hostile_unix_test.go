//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileCapture writes a captured tree that attacks blast nic --sysfs:
// eth0's operstate is a FIFO, its mtu a symlink to a file outside the
// tree, its duplex a 200 MB sparse file, its address carries terminal
// escapes, and a second interface's name is an escape sequence.
func hostileCapture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"eth0", "evil\x1b[2J"} {
		dev := filepath.Join(dir, "sys", "devices", "virtual", "net", name)
		must(os.MkdirAll(filepath.Join(dev, "statistics"), 0o755))
		must(os.MkdirAll(filepath.Join(dir, "sys", "class", "net"), 0o755))
		must(os.Symlink("../../devices/virtual/net/"+name, filepath.Join(dir, "sys", "class", "net", name)))
		must(os.WriteFile(filepath.Join(dev, "ifindex"), []byte{'2' + byte(i), '\n'}, 0o644))
		must(os.WriteFile(filepath.Join(dev, "statistics", "rx_packets"), []byte("7\n"), 0o644))
	}
	dev := filepath.Join(dir, "sys", "devices", "virtual", "net", "eth0")
	must(os.WriteFile(filepath.Join(dev, "address"), []byte("red\x1b[31mALERT\x1b]0;pwned\x07\n"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dev, "operstate"), 0o644))
	outside := filepath.Join(t.TempDir(), "mtu")
	must(os.WriteFile(outside, []byte("1500\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(dev, "mtu")))
	must(os.WriteFile(filepath.Join(dev, "duplex"), nil, 0o644))
	must(os.Truncate(filepath.Join(dev, "duplex"), 200<<20))
	return dir
}

// runNicCapped is runNicArgs that fails the test instead of hanging.
func runNicCapped(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type res struct {
		code     int
		out, err string
	}
	done := make(chan res, 1)
	go func() {
		var out, errb bytes.Buffer
		e := &env{ctx: context.Background(), argv0: "blast", stdout: &out, stderr: &errb, stdin: strings.NewReader("")}
		c := dispatch(e, append([]string{"nic"}, args...))
		done <- res{c, out.String(), errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(20 * time.Second):
		t.Fatalf("blast nic %q: still running after 20 s", args)
		panic("unreachable")
	}
}

// TestNicHostileTree: blast nic --sysfs on a hostile capture returns,
// reads nothing outside the tree, holds no 200 MB attribute, and prints no
// raw control character, in text and JSON.
func TestNicHostileTree(t *testing.T) {
	dir := hostileCapture(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stdout
	}{
		{"report", []string{"--sysfs", dir, "eth0"}, []string{
			`  mac         red\x1b[31mALERT\x1b]0;pwned\x07, permanent MAC unknown`,
			"    file too large: more than 65536 bytes: duplex\n",
			"    not a regular file: a named pipe: operstate\n",
			"    path escapes from parent: mtu\n",
		}},
		{"table", []string{"--sysfs", dir}, []string{`evil\x1b[2J`}},
		{"json", []string{"--sysfs", dir, "-J", "eth0"}, []string{
			`"mac": "red\u001b[31mALERT\u001b]0;pwned\u0007"`,
			`"mtu": "path escapes from parent"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runNicCapped(t, tc.args...)
			if code != exitOK || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if strings.ContainsAny(out, "\x1b\x07") {
				t.Errorf("stdout carries raw control characters: %q", out)
			}
			if strings.Contains(out, "1500") {
				t.Errorf("stdout shows the mtu of the file outside the tree:\n%s", out)
			}
			if tc.name == "json" && !json.Valid([]byte(out)) {
				t.Errorf("not JSON:\n%s", out)
			}
		})
	}
	t.Run("unknown interface", func(t *testing.T) {
		code, out, errs := runNicCapped(t, "--sysfs", dir, "x\x1b[31m")
		want := `blast: nic: no interface "x\x1b[31m" in ` + dir + `: see 'blast nic --sysfs ` + dir + `' for the list` + "\n"
		if code != exitUsage || out != "" || errs != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, want)
		}
	})
}
