package nicinfo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/blastnet/blast/internal/safetext"
)

// driverReader answers the questions sysfs cannot: the live ethtool/netlink reader
// on Linux, or the JSON files of a captured tree.
type driverReader interface {
	// Query asks everything; failures are recorded in DriverData.Errors.
	Query(name string) *DriverData
	// Stats returns the driver name and its "ethtool -S" counters.
	Stats(name string) (driver string, stats map[string]uint64, err error)
	Close() error
}

// Source reads interfaces from one system: the live kernel (Open) or a captured
// tree (Load). A Source is safe for concurrent use.
type Source struct {
	sys  fs.FS
	udev fs.FS
	drv  driverReader
	// desc says what the source is, for messages ("/sys", "capture /tmp/x").
	desc string
	// root is the directory the sysfs tree was read from, as the user
	// named it ("/sys", "/tmp/cap/sys"); errors name files under it.
	root string
	// captured marks a loaded tree: its snapshots carry the capture time
	// at (zero when the tree has no readable manifest), never the clock's.
	captured bool
	at       time.Time
	// kernel and boot are the kernel release and boot id a capture was
	// taken under ("" when unknown): two captures of the same interface
	// from different boots cannot be subtracted.
	kernel, boot string
}

// Config says where Open reads from. Zero values select the live system.
type Config struct {
	// SysRoot is the sysfs mount (the directory holding class/net); default /sys.
	SysRoot string
	// UdevRoot is udev's database directory (holding n<ifindex>); default
	// /run/udev/data. A missing directory only means no udev facts.
	UdevRoot string
	// NoDriver skips ethtool and netlink: sysfs and udev only.
	NoDriver bool
}

// NewSource builds a Source from file systems: sys is rooted at a sysfs tree
// (holding class/net), udev at a udev database (may be nil). It reads no ethtool
// answers; use Open or Load for those.
func NewSource(sys, udev fs.FS) *Source {
	return &Source{sys: sys, udev: udev, desc: "fs"}
}

// Close releases the ethtool socket of a live source.
func (s *Source) Close() error {
	if s.drv == nil {
		return nil
	}
	return s.drv.Close()
}

// String describes the source.
func (s *Source) String() string { return s.desc }

// Names lists the interfaces, sorted by ifindex.
func (s *Source) Names() ([]string, error) {
	ents, err := fs.ReadDir(s.sys, "class/net")
	if err != nil {
		return nil, lineError{fmt.Errorf("nicinfo: list interfaces: read %s: %w", s.path("class/net"), pathReason(err))}
	}
	type ni struct {
		name string
		idx  int
	}
	var l []ni
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || e.Name() == "bonding_masters" {
			continue
		}
		idx, _ := readInt(s.sys, "class/net/"+e.Name()+"/ifindex")
		l = append(l, ni{e.Name(), idx})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].idx != l[j].idx {
			return l[i].idx < l[j].idx
		}
		return l[i].name < l[j].name
	})
	names := make([]string, len(l))
	for i, x := range l {
		names[i] = x.name
	}
	return names, nil
}

// All inspects every interface, in ifindex order.
func (s *Source) All() ([]*Interface, error) {
	names, err := s.Names()
	if err != nil {
		return nil, err
	}
	out := make([]*Interface, 0, len(names))
	for _, n := range names {
		ifc, err := s.Inspect(n)
		if err != nil {
			if errors.Is(err, ErrNoInterface) {
				continue // vanished while listing
			}
			return nil, err
		}
		out = append(out, ifc)
	}
	return out, nil
}

// Inspect reads the full report of one interface.
func (s *Source) Inspect(name string) (*Interface, error) {
	base, err := s.ifaceDir(name)
	if err != nil {
		return nil, err
	}
	ifc := &Interface{Name: name}
	fail := func(attr string, err error) {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return
		}
		if ifc.Errors == nil {
			ifc.Errors = make(map[string]string)
		}
		ifc.Errors[attr] = errText(err)
	}
	cls := "class/net/" + name

	if v, err := readInt(s.sys, cls+"/ifindex"); err == nil {
		ifc.Index = v
	} else {
		fail("ifindex", err)
	}
	ifc.Type = s.intAttr(cls+"/type", fail)
	if v := s.intAttr(cls+"/iflink", fail); v != nil && *v != ifc.Index && *v != 0 {
		ifc.PeerIndex = v
	}
	if v, err := readAttr(s.sys, cls+"/address"); err == nil {
		ifc.MAC = v
	} else {
		fail("address", err)
	}
	if v := s.intAttr(cls+"/addr_assign_type", fail); v != nil {
		ifc.MACAssign = macAssignWords(*v)
	}
	ifc.MTU = s.intAttr(cls+"/mtu", fail)
	if v, err := readAttr(s.sys, cls+"/operstate"); err == nil {
		ifc.OperState = v
	} else {
		fail("operstate", err)
	}
	if v, err := readAttr(s.sys, cls+"/flags"); err == nil {
		if f, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32); err == nil {
			up := f&iffUp != 0
			ifc.AdminUp = &up
		}
	} else {
		fail("flags", err)
	}
	if v := s.intAttr(cls+"/carrier", fail); v != nil {
		c := *v == 1
		ifc.Carrier = &c
	}
	ifc.CarrierChanges = s.uintAttr(cls+"/carrier_changes", fail)
	ifc.CarrierUp = s.uintAttr(cls+"/carrier_up_count", fail)
	ifc.CarrierDown = s.uintAttr(cls+"/carrier_down_count", fail)

	// Speed and duplex from sysfs; ethtool link settings override them below.
	if v := s.intAttr(cls+"/speed", fail); v != nil && *v > 0 && *v != int(^uint32(0)>>1) {
		ifc.Link.SpeedMbps = v
		ifc.Link.Source = "sysfs"
	}
	if v, err := readAttr(s.sys, cls+"/duplex"); err == nil {
		if v == "full" || v == "half" {
			ifc.Link.Duplex = v
			ifc.Link.Source = "sysfs"
		}
	} else {
		fail("duplex", err)
	}

	// Queues.
	if ents, err := fs.ReadDir(s.sys, cls+"/queues"); err == nil {
		var rx, tx int
		for _, e := range ents {
			switch {
			case strings.HasPrefix(e.Name(), "rx-"):
				rx++
			case strings.HasPrefix(e.Name(), "tx-"):
				tx++
			}
		}
		ifc.Queues.RX, ifc.Queues.TX = &rx, &tx
	}

	// Counters.
	ctr, err := readStats(s.sys, cls+"/statistics")
	fail("statistics", err)
	ifc.Counters = ctr

	s.readDevice(ifc, base, cls, fail)

	// udev and naming.
	var udev map[string]string
	if s.udev != nil && ifc.Index > 0 {
		udev, err = readUdev(s.udev, ifc.Index)
		fail("udev", err)
	}
	at := s.intAttr(cls+"/name_assign_type", fail)
	ifc.Naming = describeNaming(name, at, udev)

	if s.drv != nil {
		mergeDriver(ifc, s.drv.Query(name))
	}
	ifc.Key, ifc.KeySources = keyCounters(ifc.Driver, ifc.Counters, ifc.DriverStats)
	return ifc, nil
}

// ifaceDir returns the real directory of the interface inside the tree.
func (s *Source) ifaceDir(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/") || name == "." || name == ".." {
		return "", fmt.Errorf("nicinfo: interface %q: %w", name, ErrNoInterface)
	}
	cls := "class/net/" + name
	if _, err := fs.Stat(s.sys, cls); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", lineError{fmt.Errorf("nicinfo: stat %s: %w", s.path(cls), pathReason(err))}
		}
		if t, lerr := fs.ReadLink(s.sys, cls); lerr == nil && s.captured {
			// Listed, but the device directory it links to was not
			// captured: an incomplete tree, not a vanished interface.
			return "", lineError{fmt.Errorf("nicinfo: interface %q: %s links to %s, which the capture does not hold (an incomplete tree: capture it again): %w", name, s.path(cls), t, ErrNoInterface)}
		}
		return "", fmt.Errorf("nicinfo: interface %q in %s: %w", name, s.desc, ErrNoInterface)
	}
	if t, err := fs.ReadLink(s.sys, cls); err == nil {
		real := path.Join("class/net", t)
		if fs.ValidPath(real) {
			return real, nil
		}
	}
	return cls, nil
}

func (s *Source) readDevice(ifc *Interface, real, cls string, fail func(string, error)) {
	ifc.Virtual = strings.HasPrefix(real, "devices/virtual/")
	t, err := fs.ReadLink(s.sys, cls+"/device")
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fail("device", err)
		}
		ifc.Virtual = true
		return
	}
	dev := path.Join(real, t)
	if !fs.ValidPath(dev) {
		return
	}
	if d, err := fs.ReadLink(s.sys, dev+"/driver"); err == nil {
		ifc.Driver = path.Base(d)
	}
	if b, err := fs.ReadLink(s.sys, dev+"/subsystem"); err == nil {
		ifc.Bus = path.Base(b)
	}
	pciDir := ""
	if ifc.Bus == "pci" {
		pciDir = dev
	} else if parent := path.Dir(dev); parent != "." {
		if b, err := fs.ReadLink(s.sys, parent+"/subsystem"); err == nil && path.Base(b) == "pci" {
			pciDir = parent
		}
	}
	if pciDir != "" {
		id := &PCIID{Address: path.Base(pciDir)}
		id.Vendor, _ = readAttr(s.sys, pciDir+"/vendor")
		id.Device, _ = readAttr(s.sys, pciDir+"/device")
		id.SubsystemVendor, _ = readAttr(s.sys, pciDir+"/subsystem_vendor")
		id.SubsystemDevice, _ = readAttr(s.sys, pciDir+"/subsystem_device")
		id.Class, _ = readAttr(s.sys, pciDir+"/class")
		if id.Vendor != "" || id.Device != "" {
			ifc.PCI = id
			ifc.BusInfo = id.Address
		}
	}
	if ifc.BusInfo == "" {
		ifc.BusInfo = path.Base(dev)
	}
}

func (s *Source) intAttr(p string, fail func(string, error)) *int {
	v, err := readInt(s.sys, p)
	if err != nil {
		fail(path.Base(p), err)
		return nil
	}
	return &v
}

func (s *Source) uintAttr(p string, fail func(string, error)) *uint64 {
	str, err := readAttr(s.sys, p)
	if err != nil {
		fail(path.Base(p), err)
		return nil
	}
	v, err := strconv.ParseUint(str, 10, 64)
	if err != nil {
		fail(path.Base(p), err)
		return nil
	}
	return &v
}

// Snapshot reads the counters of one interface: the generic statistics, the
// driver's -S counters and carrier_changes. It is meant to be cheap enough to
// take right before and after a test.
func (s *Source) Snapshot(name string) (*Snapshot, error) {
	if _, err := s.ifaceDir(name); err != nil {
		return nil, err
	}
	cls := "class/net/" + name
	snap := &Snapshot{Name: name, Time: s.at}
	if !s.captured && s.at.IsZero() {
		snap.Time = time.Now()
	}
	var err error
	if snap.Index, err = readInt(s.sys, cls+"/ifindex"); err != nil {
		return nil, lineError{fmt.Errorf("nicinfo: snapshot %s: read %s: %w", name, s.path(cls+"/ifindex"), pathReason(err))}
	}
	if snap.Counters, err = readStats(s.sys, cls+"/statistics"); err != nil {
		return nil, lineError{fmt.Errorf("nicinfo: snapshot %s: read %s: %w", name, s.path(cls+"/statistics"), pathReason(err))}
	}
	if v, err := readAttr(s.sys, cls+"/carrier_changes"); err == nil {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			snap.CarrierChanges = &n
		}
	}
	if d, err := fs.ReadLink(s.sys, cls+"/device/driver"); err == nil {
		snap.Driver = path.Base(d)
	}
	if s.drv != nil {
		drv, st, err := s.drv.Stats(name)
		if err == nil {
			snap.DriverStats = st
		}
		if drv != "" {
			snap.Driver = drv
		}
	}
	return snap, nil
}

func readAttr(fsys fs.FS, p string) (string, error) {
	b, err := readFile(fsys, p, MaxAttrSize)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func readInt(fsys fs.FS, p string) (int, error) {
	s, err := readAttr(fsys, p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, &fs.PathError{Op: "parse", Path: p, Err: fmt.Errorf("%q: %w", s, errNotNumber)}
	}
	return v, nil
}

// errNotNumber is an attribute that should hold a number and does not.
var errNotNumber = errors.New("not a number")

// readStats reads every file of a statistics directory; unreadable files are
// left out (absent, never zero).
func readStats(fsys fs.FS, dir string) (map[string]uint64, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	m := make(map[string]uint64, len(ents))
	for _, e := range ents {
		s, err := readAttr(fsys, dir+"/"+e.Name())
		if err != nil {
			continue
		}
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			m[e.Name()] = v
		}
	}
	return m, nil
}

// readUdev reads the E: properties of /run/udev/data/n<ifindex>.
func readUdev(fsys fs.FS, index int) (map[string]string, error) {
	b, err := readFile(fsys, "n"+strconv.Itoa(index), MaxAttrSize)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string)
	for _, line := range strings.Split(string(b), "\n") {
		kv, ok := strings.CutPrefix(line, "E:")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(k, "ID_NET_") || k == "ID_PATH" || k == "ID_VENDOR_FROM_DATABASE" || k == "ID_MODEL_FROM_DATABASE") {
			m[k] = v
		}
	}
	return m, nil
}

func errText(err error) string { return pathReason(err).Error() }

// pathReason is the reason of a *fs.PathError without its path, which is
// relative to the tree's root: messages name the file as the user knows it
// (Source.path) and wrap this.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// path names p, a path of the sysfs tree, as the user knows it: under the
// directory the tree was read from ("/tmp/cap/sys/class/net/eth0").
func (s *Source) path(p string) string {
	if s.root == "" {
		return p
	}
	return filepath.Join(s.root, filepath.FromSlash(p))
}

func macAssignWords(t int) string {
	switch t {
	case 0:
		return "permanent"
	case 1:
		return "random"
	case 2:
		return "stolen"
	case 3:
		return "set"
	}
	return "type " + strconv.Itoa(t)
}

// iffUp is IFF_UP from <net/if.h>.
const iffUp = 0x1

func itoa(i int) string { return strconv.Itoa(i) }

// mergeDriver folds the driver's answers into the report; the driver wins over
// sysfs for speed and duplex when it knows them.
func mergeDriver(ifc *Interface, d *DriverData) {
	if d == nil {
		return
	}
	for k, v := range d.Errors {
		if ifc.Errors == nil {
			ifc.Errors = make(map[string]string)
		}
		ifc.Errors[k] = v
	}
	if d.Info != nil {
		if d.Info.Driver != "" {
			ifc.Driver = d.Info.Driver
		}
		ifc.DriverVersion = d.Info.Version
		ifc.Firmware = d.Info.Firmware
		if d.Info.BusInfo != "" {
			ifc.BusInfo = d.Info.BusInfo
		}
	}
	ifc.PermMAC = d.PermAddr
	if l := d.Link; l != nil {
		if l.Speed != 0 && l.Speed != ^uint32(0) {
			sp := int(l.Speed)
			ifc.Link.SpeedMbps = &sp
			ifc.Link.Source = "ethtool"
		}
		switch l.Duplex {
		case 0:
			ifc.Link.Duplex = "half"
			ifc.Link.Source = "ethtool"
		case 1:
			ifc.Link.Duplex = "full"
			ifc.Link.Source = "ethtool"
		}
		an := l.Autoneg == 1
		ifc.Link.Autoneg = &an
		ifc.Link.Port = portName(l.Port)
		ifc.Link.Supported = nonNil(l.Supported)
		ifc.Link.Advertised = nonNil(l.Advertise)
		ifc.Link.Partner = nonNil(l.Partner)
		ifc.Link.ModesKnown = true
	}
	ifc.Link.Detected = d.Detected
	ifc.Rings = d.Ring
	ifc.Queues.Channels = d.Channels
	if d.Features != nil {
		ifc.Offloads = make(map[string]bool)
		for _, k := range keyOffloads {
			if v, ok := d.Features[k]; ok {
				ifc.Offloads[k] = v
			}
		}
	}
	ifc.DriverStats = d.Stats
	if len(d.AltNames) > 0 {
		ifc.AltNames = d.AltNames
	}
	ifc.XDP = d.XDP
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// keyOffloads are the features worth showing; the capture keeps all of them.
var keyOffloads = []string{
	"rx-checksum", "tx-checksum-ip-generic", "tx-checksum-ipv4", "tx-checksum-ipv6",
	"tx-scatter-gather", "tx-tcp-segmentation", "tx-tcp6-segmentation",
	"tx-generic-segmentation", "tx-udp-segmentation", "rx-gro", "rx-gro-hw",
	"rx-lro", "rx-hashing", "rx-vlan-hw-parse", "tx-vlan-hw-insert",
}

// dirFS is the tree at dir, for Open: a treeFS rooted there.
func dirFS(dir string) (fs.FS, error) {
	return subtreeFS(dir, ".")
}

// subtreeFS is the directory sub of the tree at dir (a captured tree's
// "sys"), as a treeFS rooted at dir: sub, and every name and symlink under
// it, must resolve inside dir.
func subtreeFS(dir, sub string) (fs.FS, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, pathReason(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	where := filepath.Join(dir, sub) // as the caller named it, for messages
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // a later chdir does not move the tree
	}
	t := treeFS{dir: dir, sub: sub}
	if st, err := t.Stat("."); err != nil {
		return nil, fmt.Errorf("%s: %w", where, pathReason(err))
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", where)
	}
	return t, nil
}

// MaxAttrSize bounds what is read of one file of a tree: a sysfs attribute
// is at most a page, a udev database entry a few KiB. Of a larger file only
// the first MaxAttrSize bytes are read, and the read fails with an error
// naming the file and wrapping ErrTooLarge.
const MaxAttrSize = 64 << 10

// maxJSONSize bounds a JSON file of a captured tree (the ethtool answers
// of a NIC with thousands of counters, the manifest).
const maxJSONSize = 16 << 20

var (
	// ErrTooLarge is a file of a tree larger than its bound (MaxAttrSize).
	ErrTooLarge = errors.New("file too large")
	// ErrNotRegular is a file of a tree that is no regular file: a named
	// pipe (which would block a read forever), a device or a socket.
	ErrNotRegular = errors.New("not a regular file")
)

// treeFS is a directory tree as an fs.FS, opened with os.OpenRoot for each
// operation (so it holds no descriptor and needs no Close): no name,
// symlink or ".." resolves outside dir, while a captured tree's relative
// links that stay inside it (class/net/eth0 -> ../../devices/...) work as
// in sysfs. Files are opened non-blocking and must be regular files or
// directories, so a named pipe fails at once instead of hanging the read;
// ReadFile reads at most MaxAttrSize bytes. Names are relative to sub.
type treeFS struct {
	dir, sub string
}

// name is the name under the root for fs name n.
func (t treeFS) name(op, n string) (string, error) {
	if !fs.ValidPath(n) {
		return "", &fs.PathError{Op: op, Path: n, Err: fs.ErrInvalid}
	}
	return path.Join(t.sub, n), nil
}

// do runs f on the tree's root and the name under it.
func do[T any](t treeFS, op, n string, f func(r *os.Root, name string) (T, error)) (T, error) {
	var zero T
	name, err := t.name(op, n)
	if err != nil {
		return zero, err
	}
	r, err := os.OpenRoot(t.dir)
	if err != nil {
		return zero, err
	}
	defer r.Close()
	return f(r, name)
}

// Open implements fs.FS: a regular file or a directory, opened with
// O_NONBLOCK and checked with fstat before anything reads it.
func (t treeFS) Open(n string) (fs.File, error) {
	return do(t, "open", n, func(r *os.Root, name string) (fs.File, error) {
		f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if m := st.Mode(); !m.IsRegular() && !m.IsDir() {
			f.Close()
			return nil, notRegular(n, m)
		}
		return f, nil
	})
}

// ReadFile implements fs.ReadFileFS, bounded by MaxAttrSize.
func (t treeFS) ReadFile(n string) ([]byte, error) {
	b, err := readFile(t, n, MaxAttrSize)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ReadDir implements fs.ReadDirFS: the entries sorted by name.
func (t treeFS) ReadDir(n string) ([]fs.DirEntry, error) {
	f, err := t.Open(n)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: n, Err: errors.New("not implemented")}
	}
	ents, err := d.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return ents, err
}

// Stat implements fs.StatFS (following symlinks inside the tree).
func (t treeFS) Stat(n string) (fs.FileInfo, error) {
	return do(t, "stat", n, func(r *os.Root, name string) (fs.FileInfo, error) { return r.Stat(name) })
}

// Lstat and ReadLink implement fs.ReadLinkFS.
func (t treeFS) Lstat(n string) (fs.FileInfo, error) {
	return do(t, "lstat", n, func(r *os.Root, name string) (fs.FileInfo, error) { return r.Lstat(name) })
}

func (t treeFS) ReadLink(n string) (string, error) {
	return do(t, "readlink", n, func(r *os.Root, name string) (string, error) { return r.Readlink(name) })
}

var _ interface {
	fs.ReadFileFS
	fs.ReadDirFS
	fs.StatFS
	fs.ReadLinkFS
} = treeFS{}

// readFile reads the regular file name of fsys, at most limit bytes. A
// larger file yields its first limit bytes and an error naming it that
// wraps ErrTooLarge; a named pipe, device or socket an error wrapping
// ErrNotRegular (through a treeFS, without ever blocking on it).
func readFile(fsys fs.FS, name string, limit int) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(name, st.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return b[:limit], &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return b, nil
}

// readTreeFile reads name (slash-separated) of the tree at dir, at most
// limit bytes, as readFile does, resolving nothing outside dir.
func readTreeFile(dir, name string, limit int) ([]byte, error) {
	return readFile(treeFS{dir: dir, sub: "."}, name, limit)
}

func notRegular(name string, m fs.FileMode) error {
	what := "a " + m.Type().String()
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m.IsDir():
		what = "a directory"
	}
	return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w: %s", ErrNotRegular, what)}
}

// lineError is an error whose text names what a tree holds (a hostile
// capture may name an interface with a line break or an escape sequence
// in it): its text is escaped, and on one line.
type lineError struct{ err error }

func (e lineError) Error() string { return safetext.Line(e.err.Error()) }

func (e lineError) Unwrap() error { return e.err }
