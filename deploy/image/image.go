package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and how it runs: the same as the Dockerfile's
// distroless image, so deploy/kubernetes runs either one unchanged.
const (
	// Entrypoint is where the binary lies in the image.
	Entrypoint = "/blast"
	// UID and GID are the user the image runs as (distroless' nonroot;
	// deploy/kubernetes sets runAsUser 65532 too).
	UID, GID = 65532, 65532
	// Home is the user's home and the working directory.
	Home = "/home/nonroot"
)

// Labels the OCI annotations name.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	// refName (the tag) and containerdName (the whole name) name the image
	// in an OCI layout's index.json.
	refName        = "org.opencontainers.image.ref.name"
	containerdName = "io.containerd.image.name"
)

// Config is what an image is built from.
type Config struct {
	Binary   []byte    // the static blast binary (CGO_ENABLED=0), linux
	Arch     string    // GOARCH of Binary
	Created  time.Time // every file's mtime and the image's creation time
	Source   string    // the repository's URL
	Version  string    // such as a git describe
	Revision string    // the commit Binary was built from
}

// BinaryInfo is what a Go binary says of itself: the platform it runs on,
// whether it needs a C library, the commit and its time.
type BinaryInfo struct {
	OS, Arch   string
	CGO        bool
	Revision   string
	CommitTime time.Time // zero when the build did not stamp it
	Modified   bool
}

// ReadBinaryInfo reads a Go binary's build information.
func ReadBinaryInfo(path string) (BinaryInfo, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return BinaryInfo{}, fmt.Errorf("%s: not a Go binary with build information: %w", path, err)
	}
	var info BinaryInfo
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			info.OS = s.Value
		case "GOARCH":
			info.Arch = s.Value
		case "CGO_ENABLED":
			info.CGO = s.Value == "1"
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				info.CommitTime = t
			}
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info, nil
}

// CheckStatic refuses a binary the scratch image cannot run.
func (b BinaryInfo) CheckStatic() error {
	if b.OS != "linux" {
		return fmt.Errorf("binary built for GOOS=%q: build it with GOOS=linux", b.OS)
	}
	if b.CGO {
		return errors.New("binary built with cgo, which needs a C library the image does not have: build it with CGO_ENABLED=0")
	}
	return nil
}

// The files beside the binary: a nonroot user, its home, a /tmp.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

// entry is one file of the layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	dir      bool
	body     []byte
}

// RootFS returns the layer's tar: every entry owned as the image runs it,
// dated created, in a fixed order, so the same binary gives the same bytes.
func RootFS(binary []byte, created time.Time) ([]byte, error) {
	entries := []entry{
		{name: Entrypoint[1:], mode: 0o755, body: binary},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "home/", mode: 0o755, dir: true},
		{name: Home[1:] + "/", mode: 0o700, uid: UID, gid: GID, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: created.UTC().Truncate(time.Second),
			Format:  tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Build returns the image: scratch, one layer, the agent by default.
func Build(c Config) (v1.Image, error) {
	if len(c.Binary) == 0 {
		return nil, errors.New("no binary")
	}
	if c.Arch == "" {
		return nil, errors.New("no architecture")
	}
	created := c.Created.UTC().Truncate(time.Second)
	fs, err := RootFS(c.Binary, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(fs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	labels := map[string]string{
		LabelTitle:   "blast",
		LabelCreated: created.Format(time.RFC3339),
	}
	for k, v := range map[string]string{LabelSource: c.Source, LabelVersion: c.Version, LabelRevision: c.Revision} {
		if v != "" {
			labels[k] = v
		}
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: c.Arch,
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint: []string{Entrypoint},
			Cmd:        []string{"agent"},
			User:       strconv.Itoa(UID) + ":" + strconv.Itoa(GID),
			WorkingDir: Home,
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			// 5201: the data port (TCP and UDP); 5202: the agent's control port.
			ExposedPorts: map[string]struct{}{"5201/tcp": {}, "5201/udp": {}, "5202/tcp": {}},
			Labels:       labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "blast image: " + Entrypoint + ", /etc/passwd and /etc/group with nonroot (65532), " + Home + ", /tmp",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return img, nil
}

// WriteLayout writes img as an OCI image layout in dir, tagged tag in its
// index. It replaces a layout dir holds already, and refuses any other
// directory.
func WriteLayout(dir string, img v1.Image, tag name.Tag) error {
	if err := CheckLayoutDir(dir); err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove the old layout: %w", err)
		}
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refName: tag.TagStr(), containerdName: tag.Name()})); err != nil {
		return fmt.Errorf("layout %s: %w", dir, err)
	}
	return nil
}

// CheckLayoutDir refuses to write a layout over a directory that is not
// one (or a file).
func CheckLayoutDir(dir string) error {
	if _, err := os.Lstat(dir); err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s exists and is not an OCI layout: remove it or name another directory", dir)
	}
	return nil
}

// WriteTarball writes img as a tarball that docker load and podman load
// read, named tag.
func WriteTarball(path string, img v1.Image, tag name.Tag) error {
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("tarball %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("tarball %s: %w", path, err)
	}
	return nil
}

// Sizes of an image: what a registry stores (manifest, config and
// compressed layers) and what its layers unpack to.
type Sizes struct {
	Compressed, Unpacked int64
}

// Size measures img.
func Size(img v1.Image) (Sizes, error) {
	var s Sizes
	m, err := img.RawManifest()
	if err != nil {
		return s, err
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return s, err
	}
	s.Compressed = int64(len(m) + len(c))
	layers, err := img.Layers()
	if err != nil {
		return s, err
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return s, err
		}
		s.Compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return s, err
		}
		u, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return s, err
		}
		s.Unpacked += u
	}
	return s, nil
}
