package nicinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// fuzzAttrs are the files of an interface's sysfs directory that
// FuzzSource writes, in the order of its attrs argument.
var fuzzAttrs = []string{"ifindex", "type", "iflink", "address", "addr_assign_type", "mtu", "operstate", "flags",
	"carrier", "carrier_changes", "carrier_up_count", "carrier_down_count", "speed", "duplex", "name_assign_type"}

// fuzzPCIAttrs are the files of the PCI function above the device.
var fuzzPCIAttrs = []string{"vendor", "device", "subsystem_vendor", "subsystem_device", "class"}

// fuzzTree builds a sysfs tree in the layout of a virtio NIC (the
// virtio fixture's): class/net/NAME links to the interface's directory
// (links[0]), whose device link (links[1]) leads to a device with a
// driver (links[2]) and a subsystem (links[3]) under a PCI function.
// attrs are the attribute files' contents (fuzzAttrs, then
// fuzzPCIAttrs), stats "name value" lines of statistics/. A second
// interface, lo, is always there.
func fuzzTree(name string, attrs, stats, links []string) fstest.MapFS {
	at := func(i int) string {
		if i < len(attrs) {
			return attrs[i]
		}
		return ""
	}
	link := func(i int, def string) string {
		if i < len(links) && links[i] != "" {
			return links[i]
		}
		return def
	}
	m := fstest.MapFS{
		"class/net/lo":                       {Data: []byte("../../devices/virtual/net/lo"), Mode: fs.ModeSymlink},
		"devices/virtual/net/lo/ifindex":     {Data: []byte("1\n")},
		"devices/virtual/net/lo/operstate":   {Data: []byte("unknown\n")},
		"devices/virtual/net/lo/mtu":         {Data: []byte("65536\n")},
		"devices/virtual/net/lo/flags":       {Data: []byte("0x9\n")},
		"devices/virtual/net/lo/statistics/": {Mode: fs.ModeDir},
	}
	if !fs.ValidPath("class/net/"+name) || strings.Contains(name, "/") {
		return m
	}
	cls := "class/net/" + name
	target := link(0, "../../devices/pci0000:00/0000:00:03.0/virtio2/net/"+name)
	dir := path.Join("class/net", target)
	if fs.ValidPath(dir) && dir != cls && !strings.HasPrefix(dir, cls+"/") {
		m[cls] = &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
	} else {
		dir = cls
	}
	for i, a := range fuzzAttrs {
		if v := at(i); v != "" {
			m[dir+"/"+a] = &fstest.MapFile{Data: []byte(v)}
		}
	}
	m[dir+"/queues/rx-0/rps_cpus"] = &fstest.MapFile{Data: []byte("0\n")}
	m[dir+"/queues/tx-0/tx_maxrate"] = &fstest.MapFile{Data: []byte("0\n")}
	m[dir+"/statistics"] = &fstest.MapFile{Mode: fs.ModeDir}
	for _, l := range stats {
		k, v, _ := strings.Cut(l, " ")
		if k != "" && fs.ValidPath(k) && !strings.Contains(k, "/") {
			m[dir+"/statistics/"+k] = &fstest.MapFile{Data: []byte(v)}
		}
	}
	m[dir+"/device"] = &fstest.MapFile{Data: []byte(link(1, "../../../virtio2")), Mode: fs.ModeSymlink}
	dev := path.Join(dir, link(1, "../../../virtio2"))
	if !fs.ValidPath(dev) || dev == "." {
		return m
	}
	m[dev+"/driver"] = &fstest.MapFile{Data: []byte(link(2, "../../../../bus/virtio/drivers/virtio_net")), Mode: fs.ModeSymlink}
	m[dev+"/subsystem"] = &fstest.MapFile{Data: []byte(link(3, "../../../../bus/virtio")), Mode: fs.ModeSymlink}
	// The PCI IDs, on the device (a PCI NIC) and on its parent (the PCI
	// function of a virtio NIC).
	parent := path.Dir(dev)
	if parent != "." {
		m[parent+"/subsystem"] = &fstest.MapFile{Data: []byte("../../../bus/pci"), Mode: fs.ModeSymlink}
	}
	for i, a := range fuzzPCIAttrs {
		if v := at(len(fuzzAttrs) + i); v != "" {
			m[dev+"/"+a] = &fstest.MapFile{Data: []byte(v)}
			if parent != "." {
				m[parent+"/"+a] = &fstest.MapFile{Data: []byte(v)}
			}
		}
	}
	return m
}

// linkFS is a MapFS whose symbolic links it resolves itself, as the
// kernel does: at most 40 of them per path (fstest.MapFS recurses without
// end on a link that leads back to itself), none leaving the tree.
type linkFS struct{ m fstest.MapFS }

var errLoop = errors.New("too many levels of symbolic links")

// resolve follows the links of p, its last element too if last.
func (l linkFS) resolve(p string, last bool) (string, error) {
	if !fs.ValidPath(p) {
		return "", fs.ErrInvalid
	}
	rest := strings.Split(p, "/")
	if p == "." {
		rest = nil
	}
	cur := "."
	for n := 0; len(rest) > 0; {
		next := path.Join(cur, rest[0])
		f, ok := l.m[next]
		if !ok || f.Mode&fs.ModeSymlink == 0 || (len(rest) == 1 && !last) {
			cur, rest = next, rest[1:]
			continue
		}
		if n++; n > 40 {
			return "", errLoop
		}
		target := string(f.Data)
		if path.IsAbs(target) {
			return "", fs.ErrNotExist
		}
		t := path.Join(cur, target)
		if !fs.ValidPath(t) {
			return "", fs.ErrNotExist
		}
		cur = "."
		if t != "." {
			rest = append(strings.Split(t, "/"), rest[1:]...)
		} else {
			rest = rest[1:]
		}
	}
	return cur, nil
}

func (l linkFS) Open(name string) (fs.File, error) {
	p, err := l.resolve(name, true)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return l.m.Open(p)
}

func (l linkFS) ReadLink(name string) (string, error) {
	p, err := l.resolve(name, false)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return l.m.ReadLink(p)
}

func (l linkFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := l.resolve(name, false)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return l.m.Lstat(p)
}

// fuzzDriver answers as a captured tree's ethtool/NAME.json does.
type fuzzDriver struct{ js []byte }

func (d fuzzDriver) read() (*DriverData, error) {
	var dd DriverData
	if err := json.Unmarshal(d.js, &dd); err != nil {
		return nil, err
	}
	return &dd, nil
}

func (d fuzzDriver) Query(string) *DriverData {
	dd, err := d.read()
	if err != nil {
		dd = &DriverData{}
		dd.setErr("capture", err)
	}
	return dd
}

func (d fuzzDriver) Stats(string) (string, map[string]uint64, error) {
	dd, err := d.read()
	if err != nil {
		return "", nil, err
	}
	drv := ""
	if dd.Info != nil {
		drv = dd.Info.Driver
	}
	return drv, dd.Stats, nil
}

func (fuzzDriver) Close() error { return nil }

// FuzzSource: what nicinfo reads from sysfs (through an fs.FS), udev's
// database and the driver (a captured tree's ethtool JSON), before and
// after a test. Whatever the files, links and answers hold, inspecting,
// snapshotting, comparing and rendering never panic, counter deltas
// never wrap, and the analysis's JSON decodes to the same analysis.
func FuzzSource(f *testing.F) {
	nul := func(s ...string) string { return strings.Join(s, "\x00") }
	virtioAttrs := nul("2\n", "1\n", "2\n", "52:54:00:12:34:56\n", "0\n", "1500\n", "up\n", "0x1003\n", "1\n", "2\n", "1\n", "1\n",
		"-1\n", "unknown\n", "4\n", "0x1af4\n", "0x1000\n", "0x1af4\n", "0x0001\n", "0x020000\n")
	e1000Attrs := nul("3\n", "1\n", "3\n", "00:1b:21:00:00:01\n", "0\n", "1500\n", "up\n", "0x1003\n", "1\n", "4\n", "2\n", "2\n",
		"100\n", "half\n", "4\n", "0x8086\n", "0x100e\n")
	stats := "rx_packets 100\ntx_packets 60000\ntx_window_errors 5\nrx_crc_errors 1\ncollisions 9\nrx_bytes 18446744073709551615"
	stats2 := "rx_packets 200\ntx_packets 120000\ntx_window_errors 382\nrx_crc_errors 0\ncollisions 12\nrx_bytes 3"
	virtioLinks := nul("", "", "", "")
	e1000Links := nul("../../devices/pci0000:00/0000:00:0b.0/net/enp0s11", "../../../0000:00:0b.0", "../../../bus/pci/drivers/e1000", "../../../bus/pci")
	drv := `{"drvinfo":{"driver":"e1000","version":"7.3.21-k8-NAPI","bus_info":"0000:00:0b.0","n_stats":40},"perm_addr":"00:1b:21:00:00:01",` +
		`"link_settings":{"speed":100,"duplex":0,"autoneg":1,"port":0,"supported":["10baseT/Half","100baseT/Half","100baseT/Full"],` +
		`"advertising":["100baseT/Full"],"lp_advertising":[]},"link_detected":true,"ring":{"rx":256,"tx":256,"max_rx":4096,"max_tx":4096},` +
		`"features":{"rx-checksum":true,"tx-tcp-segmentation":false},"stats":{"tx_abort_late_coll":377,"tx_deferred_ok":9000,"rx_packets":5},` +
		`"altnames":["enp0s11"],"errors":{"channels":"operation not supported"}}`
	drv2 := strings.Replace(strings.Replace(drv, `"tx_abort_late_coll":377`, `"tx_abort_late_coll":754`, 1), `"rx_packets":5`, `"rx_packets":1`, 1)
	udev := "E:ID_NET_NAME_PATH=enp0s11\nE:ID_NET_NAMING_SCHEME=v252\nE:ID_PATH=pci-0000:00:0b.0\nE:ID_VENDOR_FROM_DATABASE=Intel\n"
	f.Add("eth0", virtioAttrs, stats, stats2, virtioLinks, "", []byte(`{"drvinfo":{"driver":"virtio_net"},"link_settings":{"speed":4294967295,"duplex":255}}`), []byte(`{}`))
	f.Add("enp0s11", e1000Attrs, stats, stats2, e1000Links, udev, []byte(drv), []byte(drv2))
	f.Add("eth1", nul("4", "1", "x", "", "9", "-1", "down", "zz", "0", "18446744073709551616", "", "", "4294967295", "full", "1"), "", "", nul("eth1", ".", "..", "/abs"), "E:", []byte("nul"), []byte(`{"stats":{"a":-1}}`))
	f.Add("lo", "", "", "", "", "", []byte{}, []byte{})
	f.Add("..", "", "", "", "", "", []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, name, attrs, stats, stats2, links, udev string, drv, drv2 []byte) {
		split := func(s, sep string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, sep)
		}
		at, ln := split(attrs, "\x00"), split(links, "\x00")
		idx := "2"
		if len(at) > 0 {
			idx = strings.TrimSpace(at[0])
		}
		udevFS := fstest.MapFS{"n" + idx: {Data: []byte(udev)}}
		t0 := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
		before := &Source{sys: linkFS{fuzzTree(name, at, split(stats, "\n"), ln)}, udev: udevFS, drv: fuzzDriver{drv}, desc: "before", at: t0}
		after := &Source{sys: linkFS{fuzzTree(name, at, split(stats2, "\n"), ln)}, udev: udevFS, drv: fuzzDriver{drv2}, desc: "after", at: t0.Add(time.Minute)}

		all, err := before.All()
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		if err := WriteTable(io.Discard, all); err != nil {
			t.Fatalf("WriteTable: %v", err)
		}
		for _, ifc := range all {
			Summary(ifc)
			LinkState(ifc)
		}
		if _, err := before.Inspect(name); err != nil {
			if !errors.Is(err, ErrNoInterface) && strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("Inspect: error of more than one line: %q", err)
			}
			return
		}
		s0, err0 := before.Snapshot(name)
		s1, err1 := after.Snapshot(name)
		if err0 == nil && err1 == nil {
			if d, err := Delta(s0, s1); err == nil {
				for k, v := range d.Counters {
					if v > s1.Counters[k] {
						t.Errorf("counter %s: delta %d from %d to %d", k, v, s0.Counters[k], s1.Counters[k])
					}
				}
				for k, v := range d.DriverStats {
					if v > s1.DriverStats[k] {
						t.Errorf("driver counter %s: delta %d from %d to %d", k, v, s0.DriverStats[k], s1.DriverStats[k])
					}
				}
			}
		}
		for _, a := range []*Source{nil, after} {
			r, err := Analyze(before, a, name)
			if err != nil {
				continue
			}
			var b bytes.Buffer
			if err := WriteResult(&b, r); err != nil {
				t.Fatalf("WriteResult: %v", err)
			}
			if err := WriteBrief(&b, "blast-t: ", r); err != nil {
				t.Fatalf("WriteBrief: %v", err)
			}
			js, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("the analysis's JSON: %v", err)
			}
			// Decoded and encoded again, it is stable (once text that is
			// not UTF-8 has become U+FFFD).
			js1 := fuzzJSONAgain(t, js)
			if js2 := fuzzJSONAgain(t, js1); !bytes.Equal(js1, js2) {
				t.Errorf("the analysis's JSON\n%s\ndecodes to what encodes as\n%s", js1, js2)
			}
		}
	})
}

// fuzzJSONAgain decodes a Result's JSON and encodes it again.
func fuzzJSONAgain(t *testing.T, js []byte) []byte {
	t.Helper()
	var back Result
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("the analysis's JSON %s does not decode: %v", js, err)
	}
	again, err := json.Marshal(&back)
	if err != nil {
		t.Fatalf("encode the decoded analysis: %v", err)
	}
	return again
}
