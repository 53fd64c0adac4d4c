//go:build unix

package nicinfo

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileTree writes a captured tree whose eth0 is hostile: its operstate
// is a FIFO (no writer: a plain open blocks forever), its mtu a symlink to a
// file outside the tree, its duplex a 200 MB sparse file, its address
// carries terminal escapes. ifindex and the class/net link, a relative
// symlink that stays inside the tree as sysfs's do, are sound.
func hostileTree(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	dev := filepath.Join(dir, "sys", "devices", "virtual", "net", "eth0")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dev, "statistics"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "sys", "class", "net"), 0o755))
	must(os.Symlink("../../devices/virtual/net/eth0", filepath.Join(dir, "sys", "class", "net", "eth0")))
	for name, v := range map[string]string{
		"ifindex":               "2\n",
		"address":               "red\x1b[31mALERT\x1b]0;pwned\x07\n",
		"statistics/rx_packets": "7\n",
	} {
		must(os.WriteFile(filepath.Join(dev, name), []byte(v), 0o644))
	}
	must(syscall.Mkfifo(filepath.Join(dev, "operstate"), 0o644))
	outside := filepath.Join(t.TempDir(), "mtu")
	must(os.WriteFile(outside, []byte("1500\n"), 0o644))
	must(os.Symlink(outside, filepath.Join(dev, "mtu")))
	f, err := os.Create(filepath.Join(dev, "duplex"))
	must(err)
	must(f.Truncate(200 << 20))
	must(f.Close())
	return dir
}

// within runs f, failing the test if it takes more than 10 s (a blocked
// open of a FIFO takes forever).
func within[T any](t *testing.T, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	done := make(chan res, 1)
	go func() { v, err := f(); done <- res{v, err} }()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s", what)
		panic("unreachable")
	}
}

// TestHostileTree: a captured tree can neither hang blast nic (FIFO), nor
// make it read outside the tree (symlink), nor make it hold a 200 MB
// attribute, nor reach the terminal with escapes; what it could not read
// is reported, per attribute.
func TestHostileTree(t *testing.T) {
	dir := hostileTree(t)
	src, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ifc, err := within(t, "Inspect", func() (*Interface, error) { return src.Inspect("eth0") })
	if err != nil {
		t.Fatal(err)
	}
	if ifc.Index != 2 || ifc.Counters["rx_packets"] != 7 {
		t.Errorf("ifindex %d, rx_packets %d: want 2 and 7 (read through the relative symlink)", ifc.Index, ifc.Counters["rx_packets"])
	}
	if ifc.MTU != nil {
		t.Errorf("mtu %d: read through a symlink out of the tree", *ifc.MTU)
	}
	for attr, want := range map[string]string{
		"operstate": "not a regular file: a named pipe",
		"mtu":       "path escapes from parent",
		"duplex":    "file too large: more than 65536 bytes",
	} {
		if got := ifc.Errors[attr]; got != want {
			t.Errorf("Errors[%s] = %q, want %q", attr, got, want)
		}
	}
	if want := "red\x1b[31mALERT\x1b]0;pwned\x07"; ifc.MAC != want {
		t.Errorf("MAC %q, want %q (the data as it is; rendering escapes it)", ifc.MAC, want)
	}
	var out bytes.Buffer
	if err := WriteReport(&out, ifc); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(out.Bytes(), "\x1b\x07") {
		t.Errorf("the report carries raw escapes:\n%q", out.String())
	}
	if want := "\n  mac         " + `red\x1b[31mALERT\x1b]0;pwned\x07` + ", permanent MAC unknown\n"; !strings.Contains(out.String(), want) {
		t.Errorf("report:\n%s\nwant a line with %s", out.String(), want)
	}
	if s := Summary(ifc); strings.ContainsRune(s, 0x1b) {
		t.Errorf("Summary %q carries a raw escape", s)
	}
}

// TestReadFileBounded: of a 200 MB attribute only MaxAttrSize bytes are
// read, and the error names the file; memory stays small.
func TestReadFileBounded(t *testing.T) {
	dir := hostileTree(t)
	fsys, err := subtreeFS(dir, "sys")
	if err != nil {
		t.Fatal(err)
	}
	const name = "devices/virtual/net/eth0/duplex"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b, err := readFile(fsys, name, MaxAttrSize)
	runtime.ReadMemStats(&after)
	if len(b) != MaxAttrSize {
		t.Errorf("read %d bytes, want %d", len(b), MaxAttrSize)
	}
	if !errors.Is(err, ErrTooLarge) || err.Error() != "read "+name+": file too large: more than 65536 bytes" {
		t.Errorf("error %v, want ErrTooLarge naming %s", err, name)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("reading the attribute allocated %d bytes, want well under 4 MiB", got)
	}
	if b, err := fs.ReadFile(fsys, name); b != nil || !errors.Is(err, ErrTooLarge) {
		t.Errorf("fs.ReadFile: %d bytes, %v; want none and ErrTooLarge", len(b), err)
	}
}

// TestReadFileFIFO: a FIFO fails at once, wrapping ErrNotRegular, through
// every way in (readFile, fs.ReadFile, Open).
func TestReadFileFIFO(t *testing.T) {
	fsys, err := subtreeFS(hostileTree(t), "sys")
	if err != nil {
		t.Fatal(err)
	}
	const name = "class/net/eth0/operstate"
	if _, err := within(t, "readFile", func() ([]byte, error) { return readFile(fsys, name, MaxAttrSize) }); !errors.Is(err, ErrNotRegular) ||
		err.Error() != "open "+name+": not a regular file: a named pipe" {
		t.Errorf("readFile: %v, want ErrNotRegular naming the file", err)
	}
	if _, err := within(t, "fs.ReadFile", func() ([]byte, error) { return fs.ReadFile(fsys, name) }); !errors.Is(err, ErrNotRegular) {
		t.Errorf("fs.ReadFile: %v, want ErrNotRegular", err)
	}
	if _, err := within(t, "Open", func() (fs.File, error) { return fsys.Open(name) }); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open: %v, want ErrNotRegular", err)
	}
}

// TestTreeConfined: nothing of a loaded tree resolves outside it: not a
// sys that is a symlink to the live /sys, not a manifest or an ethtool
// answer that is a FIFO (Load and Inspect return), not a name with "..".
func TestTreeConfined(t *testing.T) {
	t.Run("sys links out", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(hostileTree(t), "sys"), filepath.Join(dir, "sys")); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "path escapes from parent") {
			t.Errorf("Load of a tree whose sys links out: %v, want a path escape", err)
		}
	})
	t.Run("fifo manifest and ethtool", func(t *testing.T) {
		dir := hostileTree(t)
		if err := os.Mkdir(filepath.Join(dir, "ethtool"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{manifestName, "ethtool/eth0.json"} {
			if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		src, err := within(t, "Load", func() (*Source, error) { return Load(dir) })
		if err != nil {
			t.Fatal(err)
		}
		ifc, err := within(t, "Inspect", func() (*Interface, error) { return src.Inspect("eth0") })
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ifc.Errors["capture"], "open ethtool/eth0.json: not a regular file: a named pipe"; got != want {
			t.Errorf("Errors[capture] = %q, want %q", got, want)
		}
	})
	t.Run("dot dot", func(t *testing.T) {
		fsys, err := subtreeFS(hostileTree(t), "sys")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readAttr(fsys, "../sys/class/net/eth0/ifindex"); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("a name with ..: %v, want fs.ErrInvalid", err)
		}
	})
}
