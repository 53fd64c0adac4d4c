package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// created is the date the tests' images carry.
var created = time.Date(2026, 12, 6, 5, 0, 54, 0, time.UTC)

func build(t *testing.T, c Config) v1.Image {
	t.Helper()
	img, err := Build(c)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

// TestReproducible: the same binary and date give the same image, byte for
// byte; a different binary, date or revision gives another.
func TestReproducible(t *testing.T) {
	base := Config{Binary: []byte("\x7fELF not really"), Arch: "amd64", Created: created, Source: "https://github.com/blastnet/blast", Version: "v0.1.0", Revision: "282ecb42a4a609b46bb44f0e4c851b3ecb65fe59"}
	want := digest(t, build(t, base))
	again := base
	again.Binary = slices.Clone(base.Binary)
	again.Created = created.Add(999 * time.Millisecond).In(time.FixedZone("CET", 3600)) // the same second
	if got := digest(t, build(t, again)); got != want {
		t.Errorf("the same binary and date built twice: %s, then %s", want, got)
	}
	for name, change := range map[string]func(*Config){
		"binary":   func(c *Config) { c.Binary = []byte("\x7fELF not really either") },
		"date":     func(c *Config) { c.Created = created.Add(time.Second) },
		"revision": func(c *Config) { c.Revision = "0000000000000000000000000000000000000000" },
		"arch":     func(c *Config) { c.Arch = "arm64" },
	} {
		c := base
		change(&c)
		if got := digest(t, build(t, c)); got == want {
			t.Errorf("another %s, the same digest %s", name, got)
		}
	}
}

// TestConfig: the image runs as the Dockerfile's does and as
// deploy/kubernetes expects: /blast agent, user 65532, on linux.
func TestConfig(t *testing.T) {
	img := build(t, Config{Binary: []byte("x"), Arch: "amd64", Created: created, Source: "https://github.com/blastnet/blast", Version: "v0.1.0", Revision: "abc"})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		Entrypoint:   []string{"/blast"},
		Cmd:          []string{"agent"},
		User:         "65532:65532",
		WorkingDir:   "/home/nonroot",
		Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		ExposedPorts: map[string]struct{}{"5201/tcp": {}, "5201/udp": {}, "5202/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "blast",
			"org.opencontainers.image.source":   "https://github.com/blastnet/blast",
			"org.opencontainers.image.version":  "v0.1.0",
			"org.opencontainers.image.revision": "abc",
			"org.opencontainers.image.created":  "2026-12-06T05:00:54Z",
		},
	}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(created) {
		t.Errorf("platform %s/%s created %s, want linux/amd64 created %s", cf.OS, cf.Architecture, cf.Created.Time, created)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
		t.Errorf("manifest: want OCI media types and one gzip layer, got %+v", m)
	}
}

// TestRootFS: the layer holds the binary, a nonroot user and its home, a
// /tmp anyone can write, owned and dated as the image runs them.
func TestRootFS(t *testing.T) {
	b, err := RootFS([]byte("BIN"), created)
	if err != nil {
		t.Fatal(err)
	}
	type file struct {
		Name     string
		Mode     int64
		UID, GID int
		Dir      bool
		Body     string
	}
	var got []file
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(created) {
			t.Errorf("%s dated %s, want %s", h.Name, h.ModTime, created)
		}
		got = append(got, file{h.Name, h.Mode, h.Uid, h.Gid, h.Typeflag == tar.TypeDir, string(body)})
	}
	want := []file{
		{Name: "blast", Mode: 0o755, Body: "BIN"},
		{Name: "etc/", Mode: 0o755, Dir: true},
		{Name: "etc/group", Mode: 0o644, Body: group},
		{Name: "etc/passwd", Mode: 0o644, Body: passwd},
		{Name: "home/", Mode: 0o755, Dir: true},
		{Name: "home/nonroot/", Mode: 0o700, UID: 65532, GID: 65532, Dir: true},
		{Name: "tmp/", Mode: 0o1777, Dir: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer (-want +got):\n%s", diff)
	}
	if !strings.Contains(passwd, "nonroot:x:65532:65532:") || !strings.Contains(group, "nonroot:x:65532:") {
		t.Errorf("no user 65532 in /etc/passwd or /etc/group")
	}
}

func TestCheckStatic(t *testing.T) {
	for _, tc := range []struct {
		info BinaryInfo
		want string // in the error; "" for none
	}{
		{BinaryInfo{OS: "linux", Arch: "amd64"}, ""},
		{BinaryInfo{OS: "linux", Arch: "amd64", CGO: true}, "CGO_ENABLED=0"},
		{BinaryInfo{OS: "darwin", Arch: "arm64"}, "GOOS=linux"},
	} {
		err := tc.info.CheckStatic()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want an error naming %q", tc.info, err, tc.want)
		}
	}
}

func TestCreatedTime(t *testing.T) {
	commit := BinaryInfo{CommitTime: created.Add(time.Hour)}
	for _, tc := range []struct {
		epoch string
		info  BinaryInfo
		want  time.Time
		err   string
	}{
		{"1796533254", commit, created, ""},
		{"", commit, created.Add(time.Hour), ""},
		{"", BinaryInfo{}, time.Time{}, "set SOURCE_DATE_EPOCH"},
		{"yesterday", commit, time.Time{}, "seconds since 1970"},
		{"-1", commit, time.Time{}, "seconds since 1970"},
	} {
		got, err := createdTime(tc.epoch, tc.info)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %v, want an error naming %q", tc.epoch, err, tc.err)
		}
		if !got.Equal(tc.want) {
			t.Errorf("%q: %s, want %s", tc.epoch, got, tc.want)
		}
	}
}

// TestUsage: bad input is one line naming the cause and the fix, exit 2.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.oci")
	notLayout := filepath.Join(dir, "notes")
	if err := os.Mkdir(notLayout, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable() // a Go binary: the test's
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1796533254")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-oci", out}, exitUsage, "give -binary and -oci or -tar"},
		{[]string{"-binary", self}, exitUsage, "give -binary and -oci or -tar"},
		{[]string{"-binary", self, "-oci", out, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"-binary", self, "-oci", out, "-tag", "Not A Tag"}, exitUsage, "give REGISTRY/REPOSITORY:TAG"},
		{[]string{"-binary", filepath.Join(dir, "none"), "-oci", out}, exitError, "not a Go binary"},
		{[]string{"-binary", "/etc/passwd", "-oci", out}, exitError, "not a Go binary"},
		{[]string{"-binary", self, "-oci", notLayout}, exitError, "is not an OCI layout: remove it"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%q wrote %s", tc.args, out)
		}
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") > 2 {
			t.Errorf("%q: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}
