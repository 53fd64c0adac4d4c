package nicinfo

// DriverData is what the kernel answers about an interface outside sysfs: the
// ethtool ioctls and a netlink link query. The live reader fills it from the
// kernel; Capture stores it as JSON (ethtool/<name>.json) and Load reads it back.
// A call that failed leaves its field nil and records the reason in Errors under
// the call's name ("drvinfo", "permaddr", "linksettings", "glink", "ring",
// "channels", "features", "stats", "netlink").
type DriverData struct {
	Info     *DriverInfo       `json:"drvinfo,omitempty"`
	PermAddr string            `json:"perm_addr,omitempty"`
	Link     *LinkSettings     `json:"link_settings,omitempty"`
	Detected *bool             `json:"link_detected,omitempty"`
	Ring     *Rings            `json:"ring,omitempty"`
	Channels *Channels         `json:"channels,omitempty"`
	Features map[string]bool   `json:"features,omitempty"`
	Stats    map[string]uint64 `json:"stats,omitempty"`
	AltNames []string          `json:"altnames,omitempty"`
	XDP      *XDP              `json:"xdp,omitempty"`
	Errors   map[string]string `json:"errors,omitempty"`
}

// DriverInfo is ETHTOOL_GDRVINFO.
type DriverInfo struct {
	Driver      string `json:"driver"`
	Version     string `json:"version,omitempty"`
	Firmware    string `json:"firmware,omitempty"`
	BusInfo     string `json:"bus_info,omitempty"`
	EromVersion string `json:"erom_version,omitempty"`
	NStats      uint32 `json:"n_stats"`
}

// LinkSettings is ETHTOOL_GLINKSETTINGS, decoded. Speed is in Mb/s as the
// kernel reports it (0 and 0xFFFFFFFF mean unknown); Duplex is 0 half, 1 full,
// 0xFF unknown; Autoneg is 0 off, 1 on.
type LinkSettings struct {
	Speed     uint32   `json:"speed"`
	Duplex    uint8    `json:"duplex"`
	Autoneg   uint8    `json:"autoneg"`
	Port      uint8    `json:"port"`
	Supported []string `json:"supported"`
	Advertise []string `json:"advertising"`
	Partner   []string `json:"lp_advertising"`
}

func (d *DriverData) setErr(call string, err error) {
	if err == nil {
		return
	}
	if d.Errors == nil {
		d.Errors = make(map[string]string)
	}
	d.Errors[call] = err.Error()
}

// portName decodes ethtool's PORT_* values.
func portName(p uint8) string {
	switch p {
	case 0x00:
		return "twisted pair"
	case 0x01:
		return "AUI"
	case 0x02:
		return "BNC"
	case 0x03:
		return "MII"
	case 0x04:
		return "fibre"
	case 0x05:
		return "direct attach copper"
	case 0xef:
		return "none"
	default:
		return "other"
	}
}

// maskModes turns link-mode bitmap words into mode names.
func maskModes(words []uint32) []string {
	modes := []string{}
	for i, w := range words {
		for b := 0; b < 32; b++ {
			if w&(1<<b) == 0 {
				continue
			}
			bit := i*32 + b
			if bit < len(linkModeNames) && linkModeNames[bit] != "" {
				modes = append(modes, linkModeNames[bit])
			} else {
				modes = append(modes, "bit"+itoa(bit))
			}
		}
	}
	return modes
}
