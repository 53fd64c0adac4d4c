package nicinfo

// Interface is everything nicinfo knows about one network interface. Fields that
// could not be read are nil or empty; Errors says why.
type Interface struct {
	Name     string   `json:"name"`
	Index    int      `json:"ifindex"`
	AltNames []string `json:"altnames,omitempty"`
	Naming   Naming   `json:"naming"`

	// Type is the ARPHRD type: 1 Ethernet, 772 loopback.
	Type *int `json:"type,omitempty"`
	// PeerIndex is iflink when it differs from the ifindex (veth peer, VLAN parent).
	PeerIndex *int `json:"peer_ifindex,omitempty"`
	// Virtual is true for interfaces without a backing device (veth, bridge, lo).
	Virtual bool `json:"virtual"`

	MAC string `json:"mac,omitempty"`
	// MACAssign says where MAC came from: permanent, random, stolen or set.
	MACAssign string `json:"mac_assign,omitempty"`
	PermMAC   string `json:"perm_mac,omitempty"`

	Driver        string `json:"driver,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	Firmware      string `json:"firmware,omitempty"`
	BusInfo       string `json:"bus_info,omitempty"`
	// Bus is the subsystem of the backing device: pci, virtio, usb, ...
	Bus string `json:"bus,omitempty"`
	// PCI holds the IDs of the PCI function (for virtio, of the PCI parent).
	PCI *PCIID `json:"pci,omitempty"`

	Link Link `json:"link"`

	MTU       *int   `json:"mtu,omitempty"`
	OperState string `json:"operstate,omitempty"`
	// AdminUp is IFF_UP ("ip link set up").
	AdminUp        *bool   `json:"admin_up,omitempty"`
	Carrier        *bool   `json:"carrier,omitempty"`
	CarrierChanges *uint64 `json:"carrier_changes,omitempty"`
	CarrierUp      *uint64 `json:"carrier_up_count,omitempty"`
	CarrierDown    *uint64 `json:"carrier_down_count,omitempty"`

	Queues   Queues          `json:"queues"`
	Rings    *Rings          `json:"rings,omitempty"`
	Offloads map[string]bool `json:"offloads,omitempty"`
	XDP      *XDP            `json:"xdp,omitempty"`

	// Counters are the kernel's generic statistics (sysfs statistics/).
	Counters map[string]uint64 `json:"counters,omitempty"`
	// DriverStats are the driver's own counters ("ethtool -S").
	DriverStats map[string]uint64 `json:"driver_stats,omitempty"`
	// Key holds the counters that matter for diagnosis under canonical names
	// (late_collisions, fcs_errors, ...), mapped per driver. A name is missing
	// when neither the driver nor the kernel counts it.
	Key map[string]uint64 `json:"key_counters,omitempty"`
	// KeySources says which raw counters each key counter was taken from.
	KeySources map[string]string `json:"key_sources,omitempty"`

	// Errors maps an attribute or call that could not be read to the reason.
	Errors map[string]string `json:"errors,omitempty"`
}

// PCIID identifies a PCI function.
type PCIID struct {
	Vendor          string `json:"vendor"`
	Device          string `json:"device"`
	SubsystemVendor string `json:"subsystem_vendor,omitempty"`
	SubsystemDevice string `json:"subsystem_device,omitempty"`
	Class           string `json:"class,omitempty"`
	// Address is the PCI address (domain:bus:slot.function).
	Address string `json:"address,omitempty"`
}

// Link is the physical link state. Speed and duplex are only meaningful with
// carrier; nicinfo reports what the driver says either way.
type Link struct {
	// SpeedMbps is nil when unknown (no link, virtual device without a speed).
	SpeedMbps *int `json:"speed_mbps,omitempty"`
	// Duplex is "full", "half" or "" (unknown).
	Duplex string `json:"duplex,omitempty"`
	// Autoneg is nil when the driver does not say.
	Autoneg *bool  `json:"autoneg,omitempty"`
	Port    string `json:"port,omitempty"`
	// Supported, Advertised and Partner are kernel link-mode names
	// ("1000baseT_Full"); nil when unknown, empty when known to be empty.
	Supported  []string `json:"supported"`
	Advertised []string `json:"advertised"`
	Partner    []string `json:"partner"`
	// ModesKnown is true when the three lists above were read (GLINKSETTINGS).
	ModesKnown bool `json:"modes_known"`
	// Detected is the driver's link-detected flag (ETHTOOL_GLINK).
	Detected *bool `json:"detected,omitempty"`
	// Source says where speed and duplex came from: "ethtool" or "sysfs".
	Source string `json:"source,omitempty"`
}

// Queues counts the kernel's queues (sysfs queues/) and the driver's channels.
type Queues struct {
	RX *int `json:"rx,omitempty"`
	TX *int `json:"tx,omitempty"`
	// Channels as "ethtool -l" shows them; nil when the driver has none.
	Channels *Channels `json:"channels,omitempty"`
}

// Channels are the driver's queue pairs (ETHTOOL_GCHANNELS).
type Channels struct {
	RX          uint32 `json:"rx"`
	TX          uint32 `json:"tx"`
	Other       uint32 `json:"other"`
	Combined    uint32 `json:"combined"`
	MaxRX       uint32 `json:"max_rx"`
	MaxTX       uint32 `json:"max_tx"`
	MaxOther    uint32 `json:"max_other"`
	MaxCombined uint32 `json:"max_combined"`
}

// Rings are the descriptor ring sizes (ETHTOOL_GRINGPARAM).
type Rings struct {
	RX    uint32 `json:"rx"`
	TX    uint32 `json:"tx"`
	MaxRX uint32 `json:"max_rx"`
	MaxTX uint32 `json:"max_tx"`
}

// XDP says whether an XDP program is attached.
type XDP struct {
	Attached bool   `json:"attached"`
	Mode     string `json:"mode,omitempty"`
	ProgID   uint32 `json:"prog_id,omitempty"`
}

// Naming says how the interface got its name and how stable the name is.
type Naming struct {
	// AssignType is sysfs name_assign_type; nil when the kernel did not record it.
	AssignType *int `json:"assign_type,omitempty"`
	// Kind is enumerated, predictable, user, renamed or unknown.
	Kind string `json:"kind"`
	// Words explains Kind to a person.
	Words string `json:"words"`
	// Stable is false for names that may change between boots.
	Stable bool `json:"stable"`
	// Udev holds udev's ID_NET_NAME_*, ID_NET_LINK_FILE, ID_NET_NAMING_SCHEME, ...
	Udev map[string]string `json:"udev,omitempty"`
}
