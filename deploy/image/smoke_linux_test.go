package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"golang.org/x/sys/unix"
)

// bound is how long an event may take: generous, so that a host with
// every CPU busy passes; reaching it is a failure.
const bound = 2 * time.Minute

// staticBinary is the blast binary to put in the image: $BLAST_IMAGE_BINARY
// (make test-image passes make image's), else one built here as make image
// builds it.
func staticBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BLAST_IMAGE_BINARY"); p != "" {
		return p
	}
	out := filepath.Join(t.TempDir(), "blast")
	cmd := exec.Command("go", "build", "-C", "../..", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, "./cmd/blast")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/blast: %v\n%s", err, b)
	}
	return out
}

// TestSmoke builds the image as make image does, twice (the same digest
// and the same tarball), reads it back from the OCI layout, unpacks its
// layer and runs its entrypoint as its config says, as its user, chrooted
// in it, in namespaces of its own: blast version, blast agent --help, and
// in a network namespace of the test's own with only loopback, blast
// server and the image's default command (the agent) each serving one
// blast client.
func TestSmoke(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it unpacks files owned by 65532, chroots, and makes namespaces")
	}
	bin := staticBinary(t)
	t.Setenv("SOURCE_DATE_EPOCH", "1796533254")
	dir := t.TempDir()
	var digests []string
	var tarballs [][]byte
	for i := range 2 {
		oci, tarPath := filepath.Join(dir, "blast-image.oci"), filepath.Join(dir, "blast-image"+strconv.Itoa(i)+".tar")
		var stdout, stderr bytes.Buffer
		if code := run([]string{"-binary", bin, "-oci", oci, "-tar", tarPath, "-version", "smoke"}, &stdout, &stderr); code != exitOK {
			t.Fatalf("image: exit %d\n%s%s", code, stdout.String(), stderr.String())
		}
		t.Logf("image: %s", stdout.String())
		_, d, _ := strings.Cut(strings.Fields(stdout.String())[0], "@")
		digests = append(digests, d)
		b, err := os.ReadFile(tarPath)
		if err != nil {
			t.Fatal(err)
		}
		tarballs = append(tarballs, b)
	}
	if digests[0] != digests[1] || !bytes.Equal(tarballs[0], tarballs[1]) {
		t.Fatalf("two builds of the same binary differ: digests %s and %s, tarballs equal: %v", digests[0], digests[1], bytes.Equal(tarballs[0], tarballs[1]))
	}

	img := readLayout(t, filepath.Join(dir, "blast-image.oci"))
	// Every blob as its descriptor says: digests, sizes, diff IDs.
	if err := validate.Image(img); err != nil {
		t.Fatalf("the layout's image: %v", err)
	}
	if d := digest(t, img).String(); d != digests[0] {
		t.Fatalf("the layout holds %s, the build said %s", d, digests[0])
	}
	fromTar, err := tarball.ImageFromPath(filepath.Join(dir, "blast-image0.tar"), nil)
	if err != nil {
		t.Fatalf("the tarball: %v", err)
	}
	if err := validate.Image(fromTar); err != nil {
		t.Fatalf("the tarball's image: %v", err)
	}
	// docker load's format holds the config and the layers, not the
	// manifest: the same config (the image ID docker shows) is the same image.
	if a, b := configName(t, fromTar), configName(t, img); a != b {
		t.Errorf("the tarball holds config %s, the layout %s", a, b)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/blast"}, cf.Config.Entrypoint); diff != "" || cf.Config.User != "65532:65532" {
		t.Fatalf("entrypoint (-want +got):\n%s, user %q, want 65532:65532", diff, cf.Config.User)
	}

	root := filepath.Join(dir, "rootfs")
	unpack(t, mutate.Extract(img), root)
	// Where the runtime mounts /proc, as it makes any mount point.
	if err := os.Mkdir(filepath.Join(root, "proc"), 0o555); err != nil {
		t.Fatal(err)
	}
	c := container{t: t, root: root, cfg: cf.Config}

	t.Run("version", func(t *testing.T) {
		out := c.run(t, []string{"version"})
		if !strings.HasPrefix(out, "blast ") || !strings.Contains(out, "linux/") {
			t.Errorf("blast version printed %q", out)
		}
	})
	t.Run("agent --help", func(t *testing.T) {
		out := c.run(t, []string{"agent", "--help"})
		if !strings.HasPrefix(out, "Usage: blast agent") || !strings.Contains(out, "--token-file") {
			t.Errorf("blast agent --help printed %q", out)
		}
	})
	t.Run("whoami", func(t *testing.T) {
		// The files the user may write: its home and /tmp, as the user
		// the config names; the binary it may not.
		info, err := os.Stat(filepath.Join(root, "home/nonroot"))
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != UID || st.Gid != GID || info.Mode().Perm() != 0o700 {
			t.Errorf("home/nonroot: uid %d gid %d mode %v, want 65532 65532 0700", st.Uid, st.Gid, info.Mode())
		}
		if info, err := os.Stat(filepath.Join(root, "tmp")); err != nil || info.Mode()&os.ModeSticky == 0 || info.Mode().Perm() != 0o777 {
			t.Errorf("tmp: %v %v, want drwxrwxrwt", info.Mode(), err)
		}
	})
	t.Run("server", func(t *testing.T) {
		ns := newNetns(t)
		srv := c.start(t, ns, []string{"server"})
		srv.waitFor(t, "Server listening on")
		srv.runsAs(t, c.cfg.User)
		out := c.client(t, ns, "127.0.0.1")
		t.Logf("blast client 127.0.0.1 -t 1, in the image:\n%s", out)
		srv.waitFor(t, "receiver")
	})
	t.Run("agent (the default command)", func(t *testing.T) {
		ns := newNetns(t)
		agent := c.start(t, ns, nil, "BLAST_TOKEN="+strings.Repeat("5a", 32))
		agent.waitFor(t, "control on")
		c.client(t, ns, "127.0.0.1")
		agent.waitFor(t, "receiver")
		// The control port answers, and refuses a request not signed
		// with the token.
		var status int
		ns.do(t, func() error {
			conn, err := net.DialTimeout("tcp", "127.0.0.1:5202", bound)
			if err != nil {
				return err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(bound))
			if _, err := io.WriteString(conn, "GET /v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"); err != nil {
				return err
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			status = resp.StatusCode
			return nil
		})
		if status != http.StatusUnauthorized {
			t.Errorf("GET /v1/info unsigned: %d, want 401", status)
		}
	})
}

func configName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func readLayout(t *testing.T, dir string) v1.Image {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "latest" ||
		m.Manifests[0].Annotations["io.containerd.image.name"] != "ghcr.io/blastnet/blast:latest" {
		t.Fatalf("index.json: want one image named ghcr.io/blastnet/blast:latest, got %+v", m.Manifests)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// unpack writes a flattened image's files into dir as a runtime would:
// owners, modes (setuid, sticky), dates.
func unpack(t *testing.T, r io.ReadCloser, dir string) {
	t.Helper()
	defer r.Close()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("unpack: %v", err)
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("unpack: %q leaves the root", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o700)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
				_, err = io.Copy(f, tr)
				err = errors.Join(err, f.Close())
			}
		default:
			t.Fatalf("unpack: %s: type %c, the image holds only files and directories", h.Name, h.Typeflag)
		}
		if err == nil {
			err = os.Lchown(p, h.Uid, h.Gid)
		}
		if err == nil {
			err = unix.Chmod(p, uint32(h.Mode&0o7777))
		}
		if err == nil {
			err = os.Chtimes(p, h.ModTime, h.ModTime)
		}
		if err != nil {
			t.Fatalf("unpack %s: %v", h.Name, err)
		}
	}
}

// container runs commands as the image's config says, in its unpacked
// root.
type container struct {
	t    *testing.T
	root string
	cfg  v1.Config
}

// command is the entrypoint with args (nil: the config's Cmd), in the
// image's root, as its user (no other groups), in its working directory,
// with its environment plus env, in new mount and PID namespaces with a
// /proc of their own (as a container runtime runs it), and a new network
// namespace if newNet. unshare(1) makes them; killing it kills the
// entrypoint and everything in its PID namespace.
func (c container) command(t *testing.T, args []string, newNet bool, env ...string) *exec.Cmd {
	t.Helper()
	uid, gid, ok := strings.Cut(c.cfg.User, ":")
	_, err1 := strconv.ParseUint(uid, 10, 32)
	_, err2 := strconv.ParseUint(gid, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("user %q: want UID:GID", c.cfg.User)
	}
	if args == nil {
		args = c.cfg.Cmd
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("unshare (util-linux): %v", err)
	}
	argv := []string{"unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc=/proc", // after the chroot
		"--root=" + c.root, "--wd=" + c.cfg.WorkingDir, "--setgid=" + gid, "--setuid=" + uid}
	if newNet {
		argv = append(argv, "--net")
	}
	argv = append(append(append(argv, "--"), c.cfg.Entrypoint...), args...)
	// A process group of its own, which stop kills: unshare's
	// --kill-child does not reach the entrypoint once it changed its user
	// (that clears its parent-death signal).
	return &exec.Cmd{Path: unshare, Args: argv, Env: append(slices.Clone(c.cfg.Env), env...),
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
}

// stop kills the entrypoint, the init of its PID namespace, whose end ends
// every process in it; unshare reaps it and ends. Before unshare forked,
// or if it has no child left, it kills the whole process group.
func stop(cmd *exec.Cmd) {
	pid := cmd.Process.Pid
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	children := strings.Fields(string(b))
	for _, c := range children {
		if n, err := strconv.Atoi(c); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
	if len(children) == 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// noneLeft fails if a process of cmd's group outlived it.
func noneLeft(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := syscall.Kill(-cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("%q left processes behind (kill -0 on its group: %v)", cmd.Args[cmdStart(cmd.Args):], err)
		stop(cmd)
	}
}

// run runs the entrypoint to its end; it must succeed.
func (c container) run(t *testing.T, args []string) string {
	t.Helper()
	cmd := c.command(t, args, true)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%q: %v", cmd.Args, err)
	}
	if err := waitBounded(cmd); err != nil {
		t.Fatalf("%q: %v\n%s", cmd.Args, err, out.String())
	}
	noneLeft(t, cmd)
	t.Logf("%s:\n%s", strings.Join(cmd.Args[cmdStart(cmd.Args):], " "), out.String())
	return out.String()
}

// client runs blast client HOST -t 1 in ns; it must succeed.
func (c container) client(t *testing.T, ns *netns, host string) string {
	t.Helper()
	cmd := c.command(t, []string{"client", host, "-t", "1"}, false)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	ns.do(t, cmd.Start)
	if err := waitBounded(cmd); err != nil {
		t.Fatalf("%q: %v\n%s", cmd.Args, err, out.String())
	}
	noneLeft(t, cmd)
	if !strings.Contains(out.String(), "receiver") {
		t.Fatalf("%q printed no receiver line:\n%s", cmd.Args, out.String())
	}
	return out.String()
}

// cmdStart is where the image's command starts in unshare's arguments.
func cmdStart(args []string) int {
	return slices.Index(args, "--") + 1
}

// waitBounded waits for cmd's end, killing it after bound.
func waitBounded(cmd *exec.Cmd) error {
	timer := time.AfterFunc(bound, func() { stop(cmd) })
	defer timer.Stop()
	return cmd.Wait()
}

// started is a process the test stopped at its end, with its output.
type started struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   strings.Builder
	lines chan struct{} // a line came (buffered 1)
	done  chan struct{} // the output ended
}

// start starts the entrypoint with args in ns; the test kills it at its
// end and prints its output.
func (c container) start(t *testing.T, ns *netns, args []string, env ...string) *started {
	t.Helper()
	cmd := c.command(t, args, false, env...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	ns.do(t, cmd.Start)
	w.Close()
	s := &started{cmd: cmd, lines: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			select {
			case s.lines <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		stop(cmd)
		cmd.Wait()
		select {
		case <-s.done:
		case <-time.After(bound):
			t.Errorf("%q: its output did not end within %s of its kill: a process holds it", cmd.Args[cmdStart(cmd.Args):], bound)
		}
		r.Close()
		noneLeft(t, cmd)
		t.Logf("%s:\n%s", strings.Join(cmd.Args[cmdStart(cmd.Args):], " "), s.output())
	})
	return s
}

// runsAs checks the entrypoint (unshare's child) runs as user, UID:GID,
// with no other group.
func (s *started) runsAs(t *testing.T, user string) {
	t.Helper()
	pid := s.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil || len(strings.Fields(string(b))) != 1 {
		t.Fatalf("unshare's children: %q %v", b, err)
	}
	status, err := os.ReadFile("/proc/" + strings.Fields(string(b))[0] + "/status")
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := strings.Cut(user, ":")
	want := []string{
		"Uid:\t" + strings.Repeat(uid+"\t", 3) + uid,
		"Gid:\t" + strings.Repeat(gid+"\t", 3) + gid,
		"Groups:\t",
	}
	got := strings.Split(string(status), "\n")
	for _, w := range want {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.TrimSpace(l) == strings.TrimSpace(w) }) {
			t.Errorf("%q runs without %q:\n%s", s.cmd.Args[cmdStart(s.cmd.Args):], w, status)
		}
	}
}

func (s *started) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// waitFor waits until the output holds text.
func (s *started) waitFor(t *testing.T, text string) {
	t.Helper()
	timeout := time.NewTimer(bound)
	defer timeout.Stop()
	for !strings.Contains(s.output(), text) {
		select {
		case <-s.lines:
		case <-s.done:
			if !strings.Contains(s.output(), text) {
				t.Fatalf("%q ended without printing %q:\n%s", s.cmd.Args, text, s.output())
			}
		case <-timeout.C:
			t.Fatalf("%q did not print %q within %s:\n%s", s.cmd.Args, text, bound, s.output())
		}
	}
}

// netns is a network namespace with only loopback, up, held by a locked
// thread that ends with the test (so no other goroutine runs in it).
type netns struct {
	calls chan func()
}

func newNetns(t *testing.T) *netns {
	t.Helper()
	ns := &netns{calls: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- fmt.Errorf("unshare: %w", err)
			return
		}
		ready <- loUp()
		for f := range ns.calls {
			f()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("a network namespace: %v", err)
	}
	t.Cleanup(func() { close(ns.calls) })
	return ns
}

// do runs f on the namespace's thread: sockets it opens and processes it
// starts are in the namespace.
func (ns *netns) do(t *testing.T, f func() error) {
	t.Helper()
	errc := make(chan error)
	ns.calls <- func() { errc <- f() }
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// loUp brings the calling thread's loopback up.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}
