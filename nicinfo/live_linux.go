//go:build linux

package nicinfo

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Open returns a Source reading the live system: sysfs under cfg.SysRoot, udev
// under cfg.UdevRoot and the ethtool ioctls (unless cfg.NoDriver). Close it.
func Open(cfg Config) (*Source, error) {
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	if cfg.UdevRoot == "" {
		cfg.UdevRoot = "/run/udev/data"
	}
	sys, err := dirFS(cfg.SysRoot)
	if err != nil {
		return nil, fmt.Errorf("nicinfo: open sysfs: %w", err)
	}
	s := &Source{sys: sys, desc: cfg.SysRoot, root: cfg.SysRoot}
	if udev, err := dirFS(cfg.UdevRoot); err == nil {
		s.udev = udev
	}
	if !cfg.NoDriver {
		r, err := newLiveDriver()
		if err != nil {
			return nil, err
		}
		s.drv = r
	}
	return s, nil
}

// liveDriver asks the running kernel through SIOCETHTOOL and rtnetlink.
type liveDriver struct {
	et *ethtool.Ethtool
	fd int // a second socket for our own GLINKSETTINGS ioctl
}

func newLiveDriver() (*liveDriver, error) {
	et, err := ethtool.NewEthtool()
	if err != nil {
		return nil, fmt.Errorf("nicinfo: open ethtool socket: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		et.Close()
		return nil, fmt.Errorf("nicinfo: open ethtool socket: %w", os.NewSyscallError("socket", err))
	}
	return &liveDriver{et: et, fd: fd}, nil
}

func (l *liveDriver) Close() error {
	l.et.Close()
	return os.NewSyscallError("close", unix.Close(l.fd))
}

func (l *liveDriver) Stats(name string) (string, map[string]uint64, error) {
	info, err := l.et.DriverInfo(name)
	if err != nil {
		return "", nil, fmt.Errorf("nicinfo: ethtool drvinfo %s: %w", name, err)
	}
	if info.NStats == 0 {
		return info.Driver, nil, nil
	}
	st, err := l.et.Stats(name)
	if err != nil {
		return info.Driver, nil, fmt.Errorf("nicinfo: ethtool -S %s: %w", name, err)
	}
	return info.Driver, st, nil
}

func (l *liveDriver) Query(name string) *DriverData {
	d := &DriverData{}
	info, err := l.et.DriverInfo(name)
	d.setErr("drvinfo", err)
	if err == nil {
		d.Info = &DriverInfo{
			Driver: info.Driver, Version: info.Version, Firmware: info.FwVersion,
			BusInfo: info.BusInfo, EromVersion: info.EromVersion, NStats: info.NStats,
		}
		if info.NStats > 0 {
			st, err := l.et.Stats(name)
			d.setErr("stats", err)
			d.Stats = st
		}
	}
	if pa, err := l.et.PermAddr(name); err == nil {
		d.PermAddr = pa
	} else {
		d.setErr("permaddr", err)
	}
	ls, err := getLinkSettings(l.fd, name)
	d.setErr("linksettings", err)
	d.Link = ls
	if st, err := l.et.LinkState(name); err == nil {
		up := st != 0
		d.Detected = &up
	} else {
		d.setErr("glink", err)
	}
	if r, err := l.et.GetRing(name); err == nil {
		d.Ring = &Rings{RX: r.RxPending, TX: r.TxPending, MaxRX: r.RxMaxPending, MaxTX: r.TxMaxPending}
	} else {
		d.setErr("ring", err)
	}
	if c, err := l.et.GetChannels(name); err == nil {
		d.Channels = &Channels{
			RX: c.RxCount, TX: c.TxCount, Other: c.OtherCount, Combined: c.CombinedCount,
			MaxRX: c.MaxRx, MaxTX: c.MaxTx, MaxOther: c.MaxOther, MaxCombined: c.MaxCombined,
		}
	} else {
		d.setErr("channels", err)
	}
	f, err := l.et.Features(name)
	d.setErr("features", err)
	d.Features = f

	link, err := netlink.LinkByName(name)
	d.setErr("netlink", err)
	if err == nil {
		a := link.Attrs()
		d.AltNames = a.AltNames
		x := &XDP{}
		if a.Xdp != nil && a.Xdp.Attached {
			x.Attached = true
			x.ProgID = a.Xdp.ProgId
			x.Mode = xdpMode(a.Xdp.AttachMode)
		}
		d.XDP = x
	}
	return d
}

func xdpMode(m uint32) string {
	switch m {
	case 1:
		return "native"
	case 2:
		return "generic"
	case 3:
		return "offload"
	case 4:
		return "multi"
	}
	return ""
}

// linkSettingsHdr is struct ethtool_link_settings without its flexible array.
type linkSettingsHdr struct {
	Cmd              uint32
	Speed            uint32
	Duplex           uint8
	Port             uint8
	PhyAddress       uint8
	Autoneg          uint8
	MdioSupport      uint8
	EthTpMdix        uint8
	EthTpMdixCtrl    uint8
	Nwords           int8
	Transceiver      uint8
	MasterSlaveCfg   uint8
	MasterSlaveState uint8
	RateMatching     uint8
	Reserved         [7]uint32
}

// maxNwords is the largest link_mode_masks_nwords the s8 field can carry.
const maxNwords = 127

// linkSettingsReq is the header followed by room for three masks.
type linkSettingsReq struct {
	Hdr   linkSettingsHdr
	Masks [3 * maxNwords]uint32
}

// ifreqData is struct ifreq with ifr_data.
type ifreqData struct {
	Name [unix.IFNAMSIZ]byte
	Data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// getLinkSettings does the ETHTOOL_GLINKSETTINGS handshake the way ethtool(8)
// does: ask with nwords 0, the kernel answers with -N (the number of 32-bit
// words its masks need), then ask again with N. safchain/ethtool hard-codes N,
// so on kernels with more link modes it fails and falls back to 32-bit GSET.
func getLinkSettings(fd int, name string) (*LinkSettings, error) {
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("interface name %q too long", name)
	}
	req := new(linkSettingsReq)
	req.Hdr.Cmd = unix.ETHTOOL_GLINKSETTINGS
	if err := ethtoolIoctl(fd, name, unsafe.Pointer(req)); err != nil {
		return nil, err
	}
	n := int(-req.Hdr.Nwords)
	if req.Hdr.Cmd != unix.ETHTOOL_GLINKSETTINGS || n <= 0 || n > maxNwords {
		return nil, fmt.Errorf("GLINKSETTINGS handshake: kernel answered nwords %d", req.Hdr.Nwords)
	}
	*req = linkSettingsReq{}
	req.Hdr.Cmd = unix.ETHTOOL_GLINKSETTINGS
	req.Hdr.Nwords = int8(n)
	if err := ethtoolIoctl(fd, name, unsafe.Pointer(req)); err != nil {
		return nil, err
	}
	if int(req.Hdr.Nwords) != n || req.Hdr.Cmd != unix.ETHTOOL_GLINKSETTINGS {
		return nil, fmt.Errorf("GLINKSETTINGS: kernel rejected nwords %d (answered %d)", n, req.Hdr.Nwords)
	}
	return &LinkSettings{
		Speed:     req.Hdr.Speed,
		Duplex:    req.Hdr.Duplex,
		Autoneg:   req.Hdr.Autoneg,
		Port:      req.Hdr.Port,
		Supported: maskModes(req.Masks[0:n]),
		Advertise: maskModes(req.Masks[n : 2*n]),
		Partner:   maskModes(req.Masks[2*n : 3*n]),
	}, nil
}

func ethtoolIoctl(fd int, name string, data unsafe.Pointer) error {
	var ifr ifreqData
	copy(ifr.Name[:], name)
	ifr.Data = data
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&ifr)
	if errno != 0 {
		return os.NewSyscallError("ioctl SIOCETHTOOL", errno)
	}
	return nil
}
