package nicinfo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A captured tree (written by Capture, read by Load) looks like this:
//
//	DIR/blast-nic.json              manifest: format version, time, source, kernel
//	DIR/sys/class/net/IF -> ../../devices/.../net/IF   (same symlinks as sysfs)
//	DIR/sys/devices/.../net/IF/     attribute files, statistics/, queues/*/ (empty)
//	DIR/sys/devices/.../DEV/        vendor, device, subsystem_*, class,
//	                                driver -> .../drivers/NAME, subsystem -> .../bus/BUS
//	DIR/udev/n<ifindex>             udev database entries
//	DIR/ethtool/IF.json             DriverData: the ethtool and netlink answers,
//	                                plus sysfs attributes that failed (Errors)
//
// Symlink targets are kept as the kernel wrote them; only the ones inside the
// captured tree need to resolve. Attributes that could not be read are absent.

// Manifest describes a captured tree.
type Manifest struct {
	Format   int       `json:"format"`
	Captured time.Time `json:"captured"`
	Source   string    `json:"source"`
	Hostname string    `json:"hostname,omitempty"`
	Kernel   string    `json:"kernel,omitempty"`
	// BootID is /proc/sys/kernel/random/boot_id: two captures with
	// different ones straddle a reboot, and their counters restarted.
	BootID string `json:"boot_id,omitempty"`
}

const manifestName = "blast-nic.json"

// sysfsErrAttrs are the attributes whose read errors a capture records: the
// error itself is information (EINVAL on speed means no link or no ksettings).
var sysfsErrAttrs = []string{"speed", "duplex", "carrier", "name_assign_type", "operstate", "carrier_changes", "mtu", "address"}

// Capture writes the interfaces of s (sysfs subtree, udev entries and driver
// answers) under dir, which must not exist or be empty, so that Load(dir) reads
// them back. It is how a support bundle is made.
// With names, only those interfaces are captured.
func (s *Source) Capture(dir string, names ...string) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("nicinfo: capture to %s: directory not empty", dir)
	}
	if len(names) == 0 {
		var err error
		if names, err = s.Names(); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := s.captureOne(dir, n); err != nil {
			return fmt.Errorf("nicinfo: capture %s to %s: %w", n, dir, err)
		}
	}
	m := Manifest{Format: 1, Captured: time.Now().UTC(), Source: s.desc}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		m.BootID = strings.TrimSpace(string(b))
	}
	if err := writeJSON(filepath.Join(dir, manifestName), m); err != nil {
		return fmt.Errorf("nicinfo: capture to %s: %w", dir, err)
	}
	return nil
}

func (s *Source) captureOne(dir, name string) error {
	real, err := s.ifaceDir(name)
	if err != nil {
		return err
	}
	sysDir := filepath.Join(dir, "sys")
	cls := "class/net/" + name
	if t, err := fs.ReadLink(s.sys, cls); err == nil {
		if err := symlink(sysDir, cls, t); err != nil {
			return err
		}
	}
	errs := map[string]string{}
	// Attributes at the top level of the interface directory.
	ents, err := fs.ReadDir(s.sys, cls)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(sysDir, filepath.FromSlash(real)), 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		p := real + "/" + e.Name()
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			if e.Name() != "device" && e.Name() != "subsystem" {
				continue
			}
			t, err := fs.ReadLink(s.sys, cls+"/"+e.Name())
			if err != nil {
				continue
			}
			if err := symlink(sysDir, p, t); err != nil {
				return err
			}
		case e.IsDir():
			switch e.Name() {
			case "statistics":
				if err := copyFiles(s.sys, cls+"/statistics", sysDir, p); err != nil {
					return err
				}
			case "queues":
				// The queue directories with one small file each, so that
				// the count survives tools (git) that drop empty directories.
				qs, _ := fs.ReadDir(s.sys, cls+"/queues")
				for _, q := range qs {
					f := "rps_cpus"
					if strings.HasPrefix(q.Name(), "tx-") {
						f = "tx_maxrate"
					}
					b, _ := fs.ReadFile(s.sys, cls+"/queues/"+q.Name()+"/"+f)
					if err := writeFile(sysDir, p+"/"+q.Name()+"/"+f, b); err != nil {
						return err
					}
				}
			}
		case e.Type().IsRegular():
			b, err := fs.ReadFile(s.sys, cls+"/"+e.Name())
			if err != nil {
				for _, a := range sysfsErrAttrs {
					if a == e.Name() {
						errs[a] = errText(err)
					}
				}
				continue
			}
			if err := writeFile(sysDir, p, b); err != nil {
				return err
			}
		}
	}
	// The device and, for virtio and the like, its PCI parent.
	if t, err := fs.ReadLink(s.sys, cls+"/device"); err == nil {
		dev := path.Join(real, t)
		if fs.ValidPath(dev) {
			if err := s.captureDevice(sysDir, dev); err != nil {
				return err
			}
			if parent := path.Dir(dev); parent != "." && parent != "devices" {
				if err := s.captureDevice(sysDir, parent); err != nil {
					return err
				}
			}
		}
	}
	// udev.
	if s.udev != nil {
		if idx, err := readInt(s.sys, cls+"/ifindex"); err == nil {
			if b, err := fs.ReadFile(s.udev, "n"+strconv.Itoa(idx)); err == nil {
				if err := writeFile(filepath.Join(dir, "udev"), "n"+strconv.Itoa(idx), b); err != nil {
					return err
				}
			}
		}
	}
	// Driver answers.
	d := &DriverData{}
	if s.drv != nil {
		d = s.drv.Query(name)
	}
	for k, v := range errs {
		if d.Errors == nil {
			d.Errors = map[string]string{}
		}
		d.Errors[k] = v
	}
	return writeJSON(filepath.Join(dir, "ethtool", name+".json"), d)
}

// captureDevice copies a device's identity files and its driver/subsystem links.
func (s *Source) captureDevice(sysDir, dev string) error {
	for _, f := range []string{"vendor", "device", "subsystem_vendor", "subsystem_device", "class", "revision"} {
		b, err := fs.ReadFile(s.sys, dev+"/"+f)
		if err != nil {
			continue
		}
		if err := writeFile(sysDir, dev+"/"+f, b); err != nil {
			return err
		}
	}
	for _, l := range []string{"driver", "subsystem"} {
		t, err := fs.ReadLink(s.sys, dev+"/"+l)
		if err != nil {
			continue
		}
		if err := symlink(sysDir, dev+"/"+l, t); err != nil {
			return err
		}
	}
	return nil
}

func copyFiles(fsys fs.FS, from, root, to string) error {
	ents, err := fs.ReadDir(fsys, from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := fs.ReadFile(fsys, from+"/"+e.Name())
		if err != nil {
			continue
		}
		if err := writeFile(root, to+"/"+e.Name(), b); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(root, rel string, b []byte) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

func symlink(root, rel, target string) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(target, p); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

func writeJSON(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, append(b, '\n'), 0o644)
}

// Load opens a tree written by Capture (or a fixture in the same layout) for
// analysis. It works on every platform.
func Load(dir string) (*Source, error) {
	sys, err := subtreeFS(dir, "sys") // nothing under it resolves outside dir
	if err != nil {
		return nil, lineError{fmt.Errorf("nicinfo: load: %w", err)}
	}
	s := &Source{sys: sys, desc: "capture " + dir, root: filepath.Join(dir, "sys"), captured: true,
		drv: &capturedDriver{dir: filepath.Join(dir, "ethtool")}}
	if udev, err := subtreeFS(dir, "udev"); err == nil {
		s.udev = udev
	}
	if m, err := ReadManifest(dir); err == nil {
		s.at, s.kernel, s.boot = m.Captured, m.Kernel, m.BootID
	}
	return s, nil
}

// Captured is the time a loaded tree was captured (zero when unknown, or
// for a live source).
func (s *Source) Captured() time.Time { return s.at }

// ReadManifest reads the manifest of a captured tree.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := readTreeFile(dir, manifestName, maxJSONSize)
	if err != nil {
		return nil, lineError{fmt.Errorf("nicinfo: read manifest %s: %w", filepath.Join(dir, manifestName), pathReason(err))}
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("nicinfo: parse %s: %w", filepath.Join(dir, manifestName), err)
	}
	return &m, nil
}

// capturedDriver reads DriverData from ethtool/IF.json.
type capturedDriver struct{ dir string }

func (c *capturedDriver) read(name string) (*DriverData, error) {
	b, err := readTreeFile(filepath.Dir(c.dir), filepath.Base(c.dir)+"/"+name+".json", maxJSONSize)
	if err != nil {
		return nil, err
	}
	var d DriverData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("parse %s/%s.json: %w", filepath.Base(c.dir), name, err)
	}
	return &d, nil
}

func (c *capturedDriver) Query(name string) *DriverData {
	d, err := c.read(name)
	if err != nil {
		d = &DriverData{}
		if !errors.Is(err, fs.ErrNotExist) {
			d.setErr("capture", err)
		}
	}
	return d
}

func (c *capturedDriver) Stats(name string) (string, map[string]uint64, error) {
	d, err := c.read(name)
	if err != nil {
		return "", nil, err
	}
	drv := ""
	if d.Info != nil {
		drv = d.Info.Driver
	}
	return drv, d.Stats, nil
}

func (c *capturedDriver) Close() error { return nil }
