//go:build ignore

// mkfixtures writes the recorded-style fixture trees for hardware this machine
// cannot have (e1000 at half duplex, tulip, 3c59x, igb, mlx5). Each scenario gets
// before/ and, when the test has an end state, after/, both in the layout
// nicinfo.Capture writes. The values follow the
// drivers' real sysfs and ethtool key names.
//
// Regenerate from the repository root with:
//
//	go run ./nicinfo/testdata/mkfixtures.go
//
// The virtio and veth-peerdown scenarios are real captures of this machine and
// are not written by this program. rename-eth0-eth2 holds two captures of a
// three-port machine taken under two kernels (written by swapCaptures).
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/blastnet/blast/nicinfo"
)

var genericKeys = []string{
	"collisions", "multicast", "rx_bytes", "rx_compressed", "rx_crc_errors", "rx_dropped",
	"rx_errors", "rx_fifo_errors", "rx_frame_errors", "rx_length_errors", "rx_missed_errors",
	"rx_nohandler", "rx_over_errors", "rx_packets", "tx_aborted_errors", "tx_bytes",
	"tx_carrier_errors", "tx_compressed", "tx_dropped", "tx_errors", "tx_fifo_errors",
	"tx_heartbeat_errors", "tx_packets", "tx_window_errors",
}

type pci struct{ addr, vendor, device, subVendor, subDevice, driver string }

type scenario struct {
	dir     string
	iface   string
	index   int
	pci     pci
	queues  int
	udev    map[string]string
	attrs   map[string]string // top-level sysfs attributes
	einval  []string          // attributes that read EINVAL (left out, recorded)
	stats   map[string]uint64 // generic counters at the start (others 0)
	dstats  map[string]uint64 // generic counter deltas over the test (nil: no after/)
	drv     nicinfo.DriverData
	ddelta  map[string]uint64 // -S deltas
	after   map[string]string // attributes that differ at the end
	aftRaw  map[string]uint64 // generic counters set (not added) at the end
	drvRaw  map[string]uint64 // -S counters set (not added) at the end
	elapsed time.Duration

	noEthtool  bool              // the tree holds no ethtool answers (no ethtool/ directory)
	boot       string            // the boot id of both captures ("": not recorded)
	afterIface string            // the interface's name at the end, when it was renamed
	afterUdev  map[string]string // its udev entry at the end, when it changed
}

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func baseAttrs(mac string, nameAssign string) map[string]string {
	return map[string]string{
		"address": mac, "addr_assign_type": "0", "name_assign_type": nameAssign, "type": "1",
		"mtu": "1500", "operstate": "up", "carrier": "1", "flags": "0x1003",
		"carrier_changes": "2", "carrier_up_count": "1", "carrier_down_count": "1",
		"speed": "100", "duplex": "half", "tx_queue_len": "1000",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

var (
	gigT      = []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full", "Autoneg", "TP"}
	gigTAdv   = []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full"}
	fastT     = []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "Autoneg", "TP", "MII"}
	intelKeys = []string{"rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_broadcast", "tx_broadcast",
		"rx_multicast", "tx_multicast", "rx_errors", "tx_errors", "tx_dropped", "multicast", "collisions",
		"rx_length_errors", "rx_over_errors", "rx_crc_errors", "rx_frame_errors", "rx_no_buffer_count",
		"rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors", "tx_heartbeat_errors",
		"tx_window_errors", "tx_abort_late_coll", "tx_deferred_ok", "tx_single_coll_ok", "tx_multi_coll_ok",
		"tx_timeout_count", "tx_restart_queue", "rx_long_length_errors", "rx_short_length_errors",
		"rx_align_errors", "tx_tcp_seg_good", "tx_tcp_seg_failed", "rx_flow_control_xon",
		"rx_flow_control_xoff", "tx_flow_control_xon", "tx_flow_control_xoff", "rx_csum_offload_good",
		"rx_csum_offload_errors", "alloc_rx_buff_failed", "tx_smbus", "rx_smbus", "dropped_smbus"}
)

func zeros(keys []string) map[string]uint64 {
	m := map[string]uint64{}
	for _, k := range keys {
		m[k] = 0
	}
	return m
}

func intel(driver, version string, stats map[string]uint64) nicinfo.DriverData {
	return nicinfo.DriverData{
		Info:  &nicinfo.DriverInfo{Driver: driver, Version: version, Firmware: "0.5-1", NStats: uint32(len(stats))},
		Ring:  &nicinfo.Rings{RX: 256, TX: 256, MaxRX: 4096, MaxTX: 4096},
		Stats: stats,
		Features: map[string]bool{"rx-checksum": true, "tx-checksum-ipv4": true, "tx-scatter-gather": true,
			"tx-tcp-segmentation": true, "tx-generic-segmentation": true, "rx-gro": true, "rx-vlan-hw-parse": true,
			"tx-vlan-hw-insert": true, "rx-lro": false},
		Detected: ptr(true),
		XDP:      &nicinfo.XDP{},
		Errors:   map[string]string{"channels": "operation not supported"},
	}
}

func ptr[T any](v T) *T { return &v }

func scenarios() []scenario {
	var out []scenario

	// 1. e1000 autonegotiating against a switch port forced to 100/full:
	// parallel detection picked half duplex; late collisions pile up.
	e1000 := intel("e1000", "7.3.21-k8-NAPI", zeros(intelKeys))
	e1000.PermAddr = "08:00:27:4e:1a:0b"
	e1000.Link = &nicinfo.LinkSettings{Speed: 100, Duplex: 0, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{}}
	out = append(out, scenario{
		dir: "e1000-100half-latecoll", iface: "enp0s11", index: 2, queues: 1,
		pci:   pci{"0000:00:0b.0", "0x8086", "0x100e", "0x8086", "0x001e", "e1000"},
		udev:  map[string]string{"ID_NET_NAME_PATH": "enp0s11", "ID_NET_NAME_MAC": "enx0800274e1a0b", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link", "ID_NET_DRIVER": "e1000"},
		attrs: baseAttrs("08:00:27:4e:1a:0b", "4"),
		stats: map[string]uint64{"rx_packets": 1_200_345, "tx_packets": 2_400_112, "rx_bytes": 95_000_000, "tx_bytes": 3_400_000_000, "collisions": 1000},
		dstats: map[string]uint64{"rx_packets": 30_000, "tx_packets": 60_000, "rx_bytes": 1_980_000, "tx_bytes": 86_880_000,
			"collisions": 4213, "tx_window_errors": 377, "tx_aborted_errors": 377, "tx_errors": 377, "tx_carrier_errors": 0},
		drv: e1000,
		ddelta: map[string]uint64{"rx_packets": 30_000, "tx_packets": 60_000, "collisions": 4213, "tx_window_errors": 377,
			"tx_abort_late_coll": 377, "tx_aborted_errors": 377, "tx_deferred_ok": 9000, "tx_single_coll_ok": 2900, "tx_multi_coll_ok": 1313},
		elapsed: 10 * time.Second,
	})

	// 2. Its peer, forced to 100/full: receives the aborted frames and the jam.
	e1000e := intel("e1000e", "6.18.0-k", zeros(intelKeys))
	e1000e.PermAddr = "00:1b:21:aa:bb:cc"
	e1000e.Link = &nicinfo.LinkSettings{Speed: 100, Duplex: 1, Autoneg: 0, Port: 0, Supported: gigT, Advertise: []string{"100baseT_Full"}, Partner: []string{}}
	out = append(out, scenario{
		dir: "e1000e-full-crc", iface: "enp2s0", index: 3, queues: 1,
		pci:     pci{"0000:02:00.0", "0x8086", "0x10d3", "0x8086", "0xa01f", "e1000e"},
		udev:    map[string]string{"ID_NET_NAME_PATH": "enp2s0", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link"},
		attrs:   with(baseAttrs("00:1b:21:aa:bb:cc", "4"), "duplex", "full"),
		stats:   map[string]uint64{"rx_packets": 5_000_000, "tx_packets": 4_000_000},
		dstats:  map[string]uint64{"rx_packets": 60_000, "tx_packets": 30_000, "rx_bytes": 86_880_000, "tx_bytes": 1_980_000, "rx_crc_errors": 812, "rx_frame_errors": 95, "rx_errors": 947, "rx_length_errors": 40},
		drv:     e1000e,
		ddelta:  map[string]uint64{"rx_packets": 60_000, "tx_packets": 30_000, "rx_crc_errors": 812, "rx_align_errors": 95, "rx_short_length_errors": 40, "rx_errors": 947},
		elapsed: 10 * time.Second,
	})

	// 3. tulip: no get_link_ksettings, no -S; an enumerated ethN name.
	out = append(out, scenario{
		dir: "tulip-enumerated", iface: "eth1", index: 3, queues: 1,
		pci:    pci{"0000:00:0c.0", "0x1011", "0x0019", "0x1011", "0x500b", "tulip"},
		attrs:  with(baseAttrs("00:00:f8:21:33:44", "1"), "speed", "", "duplex", ""),
		einval: []string{"speed", "duplex"},
		stats:  map[string]uint64{"rx_packets": 81_234, "tx_packets": 60_321, "rx_bytes": 52_000_000, "tx_bytes": 9_000_000},
		drv: nicinfo.DriverData{
			Info:     &nicinfo.DriverInfo{Driver: "tulip", Version: "1.1.15", BusInfo: "0000:00:0c.0"},
			PermAddr: "00:00:f8:21:33:44",
			Detected: ptr(true),
			XDP:      &nicinfo.XDP{},
			Errors: map[string]string{"linksettings": "ioctl SIOCETHTOOL: operation not supported", "ring": "operation not supported",
				"channels": "operation not supported"},
		},
	})

	// 4. 3c59x at 100/half on a hub (the partner advertises half only): heavy collisions.
	vortex := map[string]uint64{"tx_deferred": 0, "tx_max_collisions": 0, "tx_multiple_collisions": 0, "tx_single_collisions": 0, "rx_bad_ssd": 0}
	out = append(out, scenario{
		dir: "3c59x-halfdup", iface: "eth0", index: 2, queues: 1,
		pci:    pci{"0000:00:0d.0", "0x10b7", "0x9200", "0x10b7", "0x1000", "3c59x"},
		attrs:  baseAttrs("00:04:75:c1:d2:e3", "1"),
		stats:  map[string]uint64{"rx_packets": 10_000, "tx_packets": 10_000},
		dstats: map[string]uint64{"rx_packets": 20_000, "tx_packets": 50_000, "rx_bytes": 1_320_000, "tx_bytes": 72_400_000, "collisions": 5500},
		drv: nicinfo.DriverData{
			Info:     &nicinfo.DriverInfo{Driver: "3c59x", BusInfo: "0000:00:0d.0", NStats: 5},
			PermAddr: "00:04:75:c1:d2:e3",
			Link:     &nicinfo.LinkSettings{Speed: 100, Duplex: 0, Autoneg: 1, Port: 3, Supported: fastT, Advertise: []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "Autoneg", "MII"}, Partner: []string{"10baseT_Half", "100baseT_Half"}},
			Detected: ptr(true),
			Stats:    vortex,
			XDP:      &nicinfo.XDP{},
			Errors:   map[string]string{"ring": "operation not supported", "channels": "operation not supported"},
		},
		ddelta:  map[string]uint64{"tx_deferred": 8000, "tx_multiple_collisions": 2500, "tx_single_collisions": 3000},
		elapsed: 10 * time.Second,
	})

	// 5. igb with the cable pulled during the test.
	igb := intel("igb", "6.18.0-k", zeros(intelKeys))
	igb.PermAddr = "a0:36:9f:12:34:56"
	igb.Link = &nicinfo.LinkSettings{Speed: ^uint32(0), Duplex: 0xff, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{}}
	igb.Detected = ptr(false)
	out = append(out, scenario{
		dir: "down-cable", iface: "enp3s0", index: 4, queues: 8,
		pci:     pci{"0000:03:00.0", "0x8086", "0x1533", "0x8086", "0x0001", "igb"},
		udev:    map[string]string{"ID_NET_NAME_PATH": "enp3s0", "ID_NET_NAMING_SCHEME": "v252"},
		attrs:   with(baseAttrs("a0:36:9f:12:34:56", "4"), "carrier", "0", "operstate", "down", "speed", "-1", "duplex", "unknown", "carrier_changes", "4", "carrier_up_count", "2", "carrier_down_count", "2"),
		stats:   map[string]uint64{"rx_packets": 700_000, "tx_packets": 900_000},
		dstats:  map[string]uint64{"rx_packets": 400, "tx_packets": 350},
		after:   map[string]string{"carrier_changes": "6", "carrier_up_count": "3", "carrier_down_count": "3"},
		drv:     igb,
		ddelta:  map[string]uint64{"rx_packets": 400, "tx_packets": 350},
		elapsed: 10 * time.Second,
	})

	// 6. The same igb, administratively down: the kernel answers EINVAL.
	igbDown := intel("igb", "6.18.0-k", zeros(intelKeys))
	igbDown.PermAddr = "a0:36:9f:12:34:56"
	igbDown.Link = &nicinfo.LinkSettings{Speed: ^uint32(0), Duplex: 0xff, Autoneg: 1, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{}}
	igbDown.Detected = ptr(false)
	out = append(out, scenario{
		dir: "admin-down", iface: "enp3s0", index: 4, queues: 8,
		pci:    pci{"0000:03:00.0", "0x8086", "0x1533", "0x8086", "0x0001", "igb"},
		udev:   map[string]string{"ID_NET_NAME_PATH": "enp3s0", "ID_NET_NAMING_SCHEME": "v252"},
		attrs:  with(baseAttrs("a0:36:9f:12:34:56", "4"), "carrier", "", "speed", "", "duplex", "", "operstate", "down", "flags", "0x1002"),
		einval: []string{"carrier", "speed", "duplex"},
		stats:  map[string]uint64{},
		drv:    igbDown,
	})

	// 7. A gigabit link that came up at 100/full although both ends advertise 1000.
	dsh := intel("igb", "6.18.0-k", zeros(intelKeys))
	dsh.PermAddr = "a0:36:9f:65:43:21"
	dsh.Link = &nicinfo.LinkSettings{Speed: 100, Duplex: 1, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full", "Autoneg", "TP"}}
	out = append(out, scenario{
		dir: "gig-downshift", iface: "enp1s0", index: 2, queues: 8,
		pci:   pci{"0000:01:00.0", "0x8086", "0x1533", "0x8086", "0x0001", "igb"},
		udev:  map[string]string{"ID_NET_NAME_PATH": "enp1s0", "ID_NET_NAMING_SCHEME": "v252"},
		attrs: with(baseAttrs("a0:36:9f:65:43:21", "4"), "duplex", "full"),
		stats: map[string]uint64{"rx_packets": 1000, "tx_packets": 1000},
		drv:   dsh,
	})

	// 8. mlx5 with ~20 000 counters; the host drops packets (rx_out_of_buffer).
	big := map[string]uint64{}
	for _, k := range []string{"rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "rx_out_of_buffer", "rx_crc_errors_phy",
		"rx_symbol_err_phy", "rx_pcs_symbol_err_phy", "rx_corrected_bits_phy", "rx_discards_phy", "tx_discards_phy",
		"link_down_events_phy", "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy"} {
		big[k] = 0
	}
	perQ := []string{"packets", "bytes", "csum_complete", "csum_unnecessary", "csum_none", "xdp_drop", "xdp_redirect",
		"lro_packets", "lro_bytes", "ecn_mark", "removed_vlan_packets", "wqe_err", "mpwqe_filler_cqes",
		"mpwqe_filler_strides", "oversize_pkts_sw_drop", "buff_alloc_err", "cqe_compress_blks", "cqe_compress_pkts",
		"congst_umr", "arfs_err", "recover", "cache_reuse", "cache_full", "cache_empty", "cache_busy", "cache_waive",
		"xdp_tx_xmit", "xdp_tx_mpwqe", "xdp_tx_inlnw", "xdp_tx_nops", "xdp_tx_full", "xdp_tx_err", "xdp_tx_cqes",
		"pp_alloc_fast", "pp_alloc_slow", "pp_alloc_empty", "pp_recycle_cached", "pp_recycle_ring", "gro_packets", "gro_bytes"}
	for q := 0; q < 250; q++ {
		for _, k := range perQ {
			big[fmt.Sprintf("rx%d_%s", q, k)] = 0
		}
		for _, k := range perQ[:40] {
			big[fmt.Sprintf("tx%d_%s", q, k)] = 0
		}
	}
	mlx := nicinfo.DriverData{
		Info:     &nicinfo.DriverInfo{Driver: "mlx5_core", Version: "6.18.0", Firmware: "16.35.2000 (MT_0000000008)", BusInfo: "0000:81:00.0", NStats: uint32(len(big))},
		PermAddr: "b8:ce:f6:01:02:03",
		Link:     &nicinfo.LinkSettings{Speed: 25000, Duplex: 1, Autoneg: 0, Port: 5, Supported: []string{"1000baseKX_Full", "10000baseKR_Full", "25000baseCR_Full", "25000baseKR_Full", "25000baseSR_Full", "Pause", "FIBRE"}, Advertise: []string{"25000baseCR_Full", "25000baseKR_Full", "25000baseSR_Full"}, Partner: []string{}},
		Detected: ptr(true),
		Ring:     &nicinfo.Rings{RX: 1024, TX: 1024, MaxRX: 8192, MaxTX: 8192},
		Channels: &nicinfo.Channels{Combined: 16, MaxCombined: 63},
		Features: map[string]bool{"rx-checksum": true, "tx-checksum-ip-generic": true, "tx-scatter-gather": true, "tx-tcp-segmentation": true,
			"tx-tcp6-segmentation": true, "tx-generic-segmentation": true, "tx-udp-segmentation": true, "rx-gro": true, "rx-gro-hw": false,
			"rx-lro": false, "rx-hashing": true, "rx-vlan-hw-parse": true, "tx-vlan-hw-insert": true},
		Stats: big,
		XDP:   &nicinfo.XDP{},
	}
	out = append(out, scenario{
		dir: "mlx5-big", iface: "ens1f0np0", index: 6, queues: 16,
		pci:    pci{"0000:81:00.0", "0x15b3", "0x1017", "0x15b3", "0x0007", "mlx5_core"},
		udev:   map[string]string{"ID_NET_NAME_SLOT": "ens1f0np0", "ID_NET_NAME_PATH": "enp129s0f0np0", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link"},
		attrs:  with(baseAttrs("b8:ce:f6:01:02:03", "4"), "speed", "25000", "duplex", "full", "mtu", "9000"),
		stats:  map[string]uint64{"rx_packets": 9_000_000_000, "tx_packets": 8_000_000_000},
		dstats: map[string]uint64{"rx_packets": 2_000_000, "tx_packets": 1_000_000, "rx_bytes": 17_996_000_000, "tx_bytes": 66_000_000},
		drv:    mlx,
		ddelta: map[string]uint64{"rx_packets": 2_000_000, "tx_packets": 1_000_000, "rx_out_of_buffer": 5000, "rx_corrected_bits_phy": 12,
			"rx0_packets": 1_000_000, "rx1_packets": 1_000_000, "tx0_packets": 1_000_000},
		elapsed: 10 * time.Second,
	})

	// 9. e1000e whose driver reset mid-test: counters restart from zero.
	rst := intel("e1000e", "6.18.0-k", zeros(intelKeys))
	rst.PermAddr = "00:1b:21:dd:ee:ff"
	rst.Link = &nicinfo.LinkSettings{Speed: 1000, Duplex: 1, Autoneg: 1, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: gigT}
	rst.Stats["tx_abort_late_coll"] = 50
	rst.Stats["rx_packets"] = 5_000_000
	rst.Stats["tx_packets"] = 5_000_000
	out = append(out, scenario{
		dir: "counter-reset", iface: "enp4s0", index: 5, queues: 1,
		pci:     pci{"0000:04:00.0", "0x8086", "0x10d3", "0x8086", "0xa01f", "e1000e"},
		udev:    map[string]string{"ID_NET_NAME_PATH": "enp4s0", "ID_NET_NAMING_SCHEME": "v252"},
		attrs:   with(baseAttrs("00:1b:21:dd:ee:ff", "4"), "speed", "1000", "duplex", "full"),
		stats:   map[string]uint64{"rx_packets": 5_000_000, "tx_packets": 5_000_000, "tx_window_errors": 50},
		dstats:  map[string]uint64{},
		aftRaw:  map[string]uint64{"rx_packets": 1200, "tx_packets": 1100, "tx_window_errors": 0},
		drv:     rst,
		ddelta:  map[string]uint64{},
		drvRaw:  map[string]uint64{"rx_packets": 1200, "tx_packets": 1100, "tx_abort_late_coll": 0},
		elapsed: 10 * time.Second,
	})
	// 10. An r8169 renamed at run time: the admin installed
	// /etc/systemd/network/10-lan0.link and ran "ip link set eth0 down;
	// udevadm trigger --action=add /sys/class/net/eth0; ip link set lan0 up"
	// between the captures. Same boot, same ifindex: its counters went on.
	rtl := nicinfo.DriverData{
		Info:     &nicinfo.DriverInfo{Driver: "r8169", Version: "6.18.0", Firmware: "rtl8168h-2_0.0.2 02/26/15", NStats: 13},
		PermAddr: "74:d4:35:9b:20:4e",
		Link:     &nicinfo.LinkSettings{Speed: 1000, Duplex: 1, Autoneg: 1, Port: 0, Supported: []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full", "Autoneg", "TP", "MII"}, Advertise: []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full", "Autoneg", "TP", "MII"}, Partner: []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full", "Autoneg", "TP"}},
		Detected: ptr(true),
		Ring:     &nicinfo.Rings{RX: 256, TX: 256, MaxRX: 256, MaxTX: 256},
		Features: map[string]bool{"rx-checksum": true, "tx-checksum-ipv4": true, "tx-checksum-ipv6": true, "tx-scatter-gather": true, "tx-tcp-segmentation": false,
			"tx-generic-segmentation": true, "rx-gro": true, "rx-vlan-hw-parse": true, "tx-vlan-hw-insert": true},
		Stats: map[string]uint64{"tx_packets": 4_120_331, "rx_packets": 6_000_218, "tx_errors": 0, "rx_errors": 0, "rx_missed": 0, "align_errors": 0,
			"tx_single_collisions": 0, "tx_multi_collisions": 0, "unicast": 5_990_001, "broadcast": 8_101, "multicast": 2_116, "tx_aborted": 0, "tx_underrun": 0},
		XDP:    &nicinfo.XDP{},
		Errors: map[string]string{"channels": "operation not supported"},
	}
	out = append(out, scenario{
		dir: "rename-pinned-lan0", iface: "eth0", index: 2, queues: 1,
		pci:        pci{"0000:02:00.0", "0x10ec", "0x8168", "0x1458", "0xe000", "r8169"},
		udev:       map[string]string{"ID_NET_NAME_MAC": "enx74d4359b204e", "ID_NET_NAME_PATH": "enp2s0", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_DRIVER": "r8169"},
		attrs:      with(baseAttrs("74:d4:35:9b:20:4e", "1"), "speed", "1000", "duplex", "full"),
		stats:      map[string]uint64{"rx_packets": 6_000_218, "tx_packets": 4_120_331, "rx_bytes": 7_400_112_018, "tx_bytes": 1_020_331_875, "multicast": 2_116},
		dstats:     map[string]uint64{"rx_packets": 412_877, "tx_packets": 203_419, "rx_bytes": 601_334_120, "tx_bytes": 14_662_004, "multicast": 12},
		after:      map[string]string{"name_assign_type": "4", "carrier_changes": "4", "carrier_up_count": "2", "carrier_down_count": "2"},
		drv:        rtl,
		ddelta:     map[string]uint64{"unicast": 412_801, "broadcast": 64},
		elapsed:    5*time.Minute + 12*time.Second,
		boot:       "3f6c2a91-0d7e-4c55-b1a8-6e2f9d40c7b3",
		afterIface: "lan0",
		afterUdev: map[string]string{"ID_NET_NAME": "lan0", "ID_NET_NAME_MAC": "enx74d4359b204e", "ID_NET_NAME_PATH": "enp2s0", "ID_NET_NAMING_SCHEME": "v252",
			"ID_NET_DRIVER": "r8169", "ID_NET_LINK_FILE": "/etc/systemd/network/10-lan0.link"},
	})

	// 11. e1000e autonegotiating with a lab instrument whose 10BASE-T port
	// negotiates but offers only 10baseT_Half: the link is rightly
	// 10/half, and collisions are normal there.
	lab := intel("e1000e", "6.18.0-k", zeros(intelKeys))
	lab.PermAddr = "3c:97:0e:41:7a:d2"
	lab.Link = &nicinfo.LinkSettings{Speed: 10, Duplex: 0, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{"10baseT_Half", "Autoneg"}}
	out = append(out, scenario{
		dir: "e1000e-10half-partner", iface: "enp0s25", index: 2, queues: 1,
		pci:     pci{"0000:00:19.0", "0x8086", "0x1502", "0x17aa", "0x21f3", "e1000e"},
		udev:    map[string]string{"ID_NET_NAME_PATH": "enp0s25", "ID_NET_NAME_MAC": "enx3c970e417ad2", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link", "ID_NET_DRIVER": "e1000e"},
		attrs:   with(baseAttrs("3c:97:0e:41:7a:d2", "4"), "speed", "10"),
		stats:   map[string]uint64{"rx_packets": 120_400, "tx_packets": 98_311, "rx_bytes": 41_000_000, "tx_bytes": 12_500_000, "collisions": 2_410},
		dstats:  map[string]uint64{"rx_packets": 9_500, "tx_packets": 8_000, "rx_bytes": 6_080_000, "tx_bytes": 1_104_000, "collisions": 240},
		drv:     lab,
		ddelta:  map[string]uint64{"tx_deferred_ok": 900, "tx_single_coll_ok": 200, "tx_multi_coll_ok": 40},
		elapsed: time.Minute,
	})

	// 12. tulip (DE500) on a busy 100 Mb/s hub: no link settings, so the
	// kernel cannot say the duplex, but it counts collisions, and
	// tx_aborted_errors: frames given up after 16 collisions.
	out = append(out, scenario{
		dir: "tulip-hub-excessive", iface: "eth0", index: 2, queues: 1,
		pci:    pci{"0000:00:0a.0", "0x1011", "0x0019", "0x1011", "0x500b", "tulip"},
		attrs:  with(baseAttrs("00:00:f8:1c:9e:07", "1"), "speed", "", "duplex", ""),
		einval: []string{"speed", "duplex"},
		stats:  map[string]uint64{"rx_packets": 2_931_004, "tx_packets": 2_511_870, "rx_bytes": 1_900_000_000, "tx_bytes": 2_700_000_000, "collisions": 301_114, "tx_aborted_errors": 5_120, "tx_errors": 5_120},
		dstats: map[string]uint64{"rx_packets": 61_000, "tx_packets": 80_000, "rx_bytes": 4_270_000, "tx_bytes": 115_840_000, "collisions": 9_600, "tx_aborted_errors": 212, "tx_errors": 212},
		drv: nicinfo.DriverData{
			Info:     &nicinfo.DriverInfo{Driver: "tulip", Version: "1.1.15"},
			PermAddr: "00:00:f8:1c:9e:07",
			Detected: ptr(true),
			XDP:      &nicinfo.XDP{},
			Errors: map[string]string{"linksettings": "ioctl SIOCETHTOOL: operation not supported", "ring": "operation not supported",
				"channels": "operation not supported"},
		},
		elapsed: time.Minute,
	})

	// 13. The e1000e-full-crc situation on another machine, captured
	// without ethtool answers (no ethtool/ directory): sysfs says 100/full
	// and counts CRC and alignment (rx_frame_errors) errors; whether an end
	// is forced is unknown.
	out = append(out, scenario{
		dir: "e1000e-100full-crc-noethtool", iface: "enp3s0", index: 3, queues: 1,
		pci:       pci{"0000:03:00.0", "0x8086", "0x10d3", "0x8086", "0xa01f", "e1000e"},
		udev:      map[string]string{"ID_NET_NAME_PATH": "enp3s0", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link", "ID_NET_DRIVER": "e1000e"},
		attrs:     with(baseAttrs("00:1b:21:3c:5d:7e", "4"), "duplex", "full"),
		stats:     map[string]uint64{"rx_packets": 880_000, "tx_packets": 710_000, "rx_bytes": 1_100_000_000, "tx_bytes": 90_000_000},
		dstats:    map[string]uint64{"rx_packets": 50_000, "tx_packets": 38_000, "rx_bytes": 72_400_000, "tx_bytes": 2_508_000, "rx_crc_errors": 655, "rx_frame_errors": 71, "rx_length_errors": 30, "rx_errors": 756},
		noEthtool: true,
		elapsed:   10 * time.Minute,
	})
	// 14. e1000e on an old 10BASE-T hub (link pulses only, no
	// autonegotiation: the partner advertises nothing, so parallel
	// detection chose 10/half), a busy segment: 45% collisions and frames
	// given up after 16 (tx_aborted_errors), but no late collision and no
	// CRC error: every station listens before it sends. A hub, not a
	// duplex mismatch (compare e1000-100half-latecoll and its peer
	// e1000e-full-crc).
	hub := intel("e1000e", "6.18.0-k", zeros(intelKeys))
	hub.PermAddr = "00:1b:21:5e:08:a4"
	hub.Link = &nicinfo.LinkSettings{Speed: 10, Duplex: 0, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{}}
	out = append(out, scenario{
		dir: "e1000e-10half-hub", iface: "enp0s25", index: 2, queues: 1,
		pci:     pci{"0000:00:19.0", "0x8086", "0x10ef", "0x8086", "0x0000", "e1000e"},
		udev:    map[string]string{"ID_NET_NAME_PATH": "enp0s25", "ID_NET_NAME_MAC": "enx001b215e08a4", "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link", "ID_NET_DRIVER": "e1000e"},
		attrs:   with(baseAttrs("00:1b:21:5e:08:a4", "4"), "speed", "10"),
		stats:   map[string]uint64{"rx_packets": 410_220, "tx_packets": 388_004, "rx_bytes": 301_000_000, "tx_bytes": 270_500_000, "collisions": 90_112, "tx_aborted_errors": 1_904, "tx_errors": 1_904},
		dstats:  map[string]uint64{"rx_packets": 21_000, "tx_packets": 20_000, "rx_bytes": 1_386_000, "tx_bytes": 28_960_000, "collisions": 9_000, "tx_aborted_errors": 310, "tx_errors": 310},
		drv:     hub,
		ddelta:  map[string]uint64{"rx_packets": 21_000, "tx_packets": 20_000, "collisions": 9_000, "tx_aborted_errors": 310, "tx_deferred_ok": 6_400, "tx_single_coll_ok": 3_100, "tx_multi_coll_ok": 2_050},
		elapsed: time.Minute,
	})
	return out
}

// swapCaptures are two captures of a server with an onboard e1000e and a
// dual-port igb, named eth0..eth2 by the kernel (net.ifnames=0): under
// kernel 6.12 the e1000e probed first and was eth0; after a reboot into
// 6.18, igb probed first, took eth0 and eth1, and the e1000e became eth2.
// The counters restarted with the reboot.
func swapCaptures() (before, after capture) {
	e1000e := pci{"0000:00:19.0", "0x8086", "0x1502", "0x15d9", "0x0629", "e1000e"}
	igb0 := pci{"0000:03:00.0", "0x8086", "0x10c9", "0x8086", "0xa03c", "igb"}
	igb1 := pci{"0000:03:00.1", "0x8086", "0x10c9", "0x8086", "0xa03c", "igb"}
	gigPartner := []string{"10baseT_Half", "10baseT_Full", "100baseT_Half", "100baseT_Full", "1000baseT_Full", "Autoneg", "TP"}
	drv := func(driver, perm, kernel string, up bool, stats map[string]uint64) *nicinfo.DriverData {
		d := intel(driver, kernel+"-k", stats)
		d.PermAddr = perm
		d.Link = &nicinfo.LinkSettings{Speed: 1000, Duplex: 1, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: gigPartner}
		if !up {
			d.Link = &nicinfo.LinkSettings{Speed: ^uint32(0), Duplex: 0xff, Autoneg: 1, Port: 0, Supported: gigT, Advertise: append(gigTAdv, "Autoneg", "TP"), Partner: []string{}}
			d.Detected = ptr(false)
		}
		return &d
	}
	// nic is one port: up with traffic, or down (never configured).
	nic := func(name string, idx int, p pci, mac, kernel string, up bool, udev map[string]string, gen map[string]uint64) nicState {
		stats := zeros(genericKeys)
		maps.Copy(stats, gen)
		dstats := zeros(intelKeys)
		for k := range dstats {
			if v, ok := stats[k]; ok {
				dstats[k] = v
			}
		}
		n := nicState{iface: name, index: idx, pci: p, queues: 8, udev: udev, stats: stats,
			attrs: with(baseAttrs(mac, "1"), "speed", "1000", "duplex", "full"),
			drv:   drv(p.driver, mac, kernel, up, dstats)}
		if p.driver == "e1000e" {
			n.queues = 1
		}
		if !up {
			n.attrs = with(n.attrs, "carrier", "", "speed", "", "duplex", "", "operstate", "down", "flags", "0x1002",
				"carrier_changes", "1", "carrier_up_count", "0", "carrier_down_count", "1")
			n.einval = []string{"carrier", "speed", "duplex"}
		}
		return n
	}
	udev := func(p pci, path, onboard string) map[string]string {
		m := map[string]string{"ID_NET_NAME_PATH": path, "ID_NET_NAMING_SCHEME": "v252", "ID_NET_LINK_FILE": "/usr/lib/systemd/network/99-default.link", "ID_NET_DRIVER": p.driver}
		if onboard != "" {
			m["ID_NET_NAME_ONBOARD"] = onboard
		}
		return m
	}
	const (
		macE  = "00:25:90:3a:5c:10"
		macI0 = "00:1b:21:8e:40:aa"
		macI1 = "00:1b:21:8e:40:ab"
	)
	before = capture{
		source: "fixture rename-eth0-eth2 (written by mkfixtures.go)", at: t0, kernel: "6.12.0", boot: "8c1e5f0a-3d2b-4b8e-9f47-2a6d1c0b7e35",
		nics: []nicState{
			nic("eth0", 2, e1000e, macE, "6.12.0", true, udev(e1000e, "enp0s25", "eno1"),
				map[string]uint64{"rx_packets": 381_220_114, "tx_packets": 402_118_903, "rx_bytes": 301_456_880_112, "tx_bytes": 377_002_118_640, "multicast": 1_204_117}),
			nic("eth1", 3, igb0, macI0, "6.12.0", true, udev(igb0, "enp3s0f0", ""),
				map[string]uint64{"rx_packets": 95_331_020, "tx_packets": 88_210_457, "rx_bytes": 70_118_990_431, "tx_bytes": 61_775_123_908, "multicast": 301_422}),
			nic("eth2", 4, igb1, macI1, "6.12.0", false, udev(igb1, "enp3s0f1", ""), nil),
		},
	}
	after = capture{
		source: "fixture rename-eth0-eth2 (written by mkfixtures.go)", at: t0.Add(21*time.Hour + 35*time.Minute + 18*time.Second), kernel: "6.18.0", boot: "e2f4a9d1-6b3c-4f0e-8a12-5c7d9e3b1f60",
		nics: []nicState{
			nic("eth0", 2, igb0, macI0, "6.18.0", true, udev(igb0, "enp3s0f0", ""),
				map[string]uint64{"rx_packets": 301_877, "tx_packets": 276_014, "rx_bytes": 221_430_112, "tx_bytes": 190_887_301, "multicast": 911}),
			nic("eth1", 3, igb1, macI1, "6.18.0", false, udev(igb1, "enp3s0f1", ""), nil),
			nic("eth2", 4, e1000e, macE, "6.18.0", true, udev(e1000e, "enp0s25", "eno1"),
				map[string]uint64{"rx_packets": 1_204_331, "tx_packets": 987_120, "rx_bytes": 1_051_220_417, "tx_bytes": 1_318_004_226, "multicast": 3_877}),
		},
	}
	return before, after
}

func main() {
	root := filepath.Join("nicinfo", "testdata")
	if _, err := os.Stat(root); err != nil {
		log.Fatal("run from the repository root: ", err)
	}
	for _, sc := range scenarios() {
		dir := filepath.Join(root, sc.dir)
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
		stats := zeros(genericKeys)
		maps.Copy(stats, sc.stats)
		// Driver counters named like the kernel's generic ones (Intel's
		// rx_packets, collisions, ...) count the same events.
		drv0 := sc.drv
		drv0.Stats = maps.Clone(sc.drv.Stats)
		for k := range drv0.Stats {
			if v, ok := stats[k]; ok {
				drv0.Stats[k] = v
			}
		}
		write(filepath.Join(dir, "before"), sc, sc.iface, sc.udev, sc.attrs, stats, drv0, t0)
		if sc.dstats == nil && sc.aftRaw == nil {
			continue
		}
		attrs := maps.Clone(sc.attrs)
		maps.Copy(attrs, sc.after)
		st1 := maps.Clone(stats)
		for k, v := range sc.dstats {
			st1[k] += v
		}
		maps.Copy(st1, sc.aftRaw)
		drv := drv0
		drv.Stats = maps.Clone(drv0.Stats)
		for k, v := range sc.ddelta {
			if _, shared := st1[k]; !shared {
				drv.Stats[k] += v
			}
		}
		for k := range drv.Stats {
			if v, ok := st1[k]; ok {
				drv.Stats[k] = v
			}
		}
		maps.Copy(drv.Stats, sc.drvRaw)
		name, udev := sc.iface, sc.udev
		if sc.afterIface != "" {
			name = sc.afterIface
		}
		if sc.afterUdev != nil {
			udev = sc.afterUdev
		}
		write(filepath.Join(dir, "after"), sc, name, udev, attrs, st1, drv, t0.Add(sc.elapsed))
	}
	before, after := swapCaptures()
	dir := filepath.Join(root, "rename-eth0-eth2")
	must(os.RemoveAll(dir))
	writeTree(filepath.Join(dir, "before"), before)
	writeTree(filepath.Join(dir, "after"), after)
}

// nicState is one interface as a captured tree records it.
type nicState struct {
	iface  string
	index  int
	pci    pci
	queues int
	udev   map[string]string
	attrs  map[string]string // top-level sysfs attributes
	einval []string          // attributes that read EINVAL (left out, recorded)
	stats  map[string]uint64 // the generic counters
	drv    *nicinfo.DriverData
}

// capture is one captured tree: its manifest and its interfaces.
type capture struct {
	source       string
	at           time.Time
	kernel, boot string
	nics         []nicState
}

func write(dir string, sc scenario, iface string, udev, attrs map[string]string, stats map[string]uint64, drv nicinfo.DriverData, at time.Time) {
	n := nicState{iface: iface, index: sc.index, pci: sc.pci, queues: sc.queues, udev: udev, attrs: attrs, einval: sc.einval, stats: stats, drv: &drv}
	if sc.noEthtool {
		n.drv = nil
	}
	writeTree(dir, capture{source: "fixture " + sc.dir + " (written by mkfixtures.go)", at: at, kernel: "6.18.0", boot: sc.boot, nics: []nicState{n}})
}

func writeTree(dir string, c capture) {
	sys := filepath.Join(dir, "sys")
	for _, n := range c.nics {
		writeNIC(dir, sys, n)
	}
	js(filepath.Join(dir, "blast-nic.json"), nicinfo.Manifest{Format: 1, Captured: c.at, Source: c.source, Kernel: c.kernel, BootID: c.boot})
}

func writeNIC(dir, sys string, n nicState) {
	real := filepath.Join("devices", "pci0000:00", n.pci.addr, "net", n.iface)
	must(os.MkdirAll(filepath.Join(sys, "class", "net"), 0o755))
	must(os.Symlink(filepath.Join("..", "..", real), filepath.Join(sys, "class", "net", n.iface)))
	ifd := filepath.Join(sys, real)
	attrs := with(n.attrs, "ifindex", fmt.Sprint(n.index), "iflink", fmt.Sprint(n.index))
	for k, v := range attrs {
		file(filepath.Join(ifd, k), v)
	}
	for k, v := range n.stats {
		file(filepath.Join(ifd, "statistics", k), fmt.Sprint(v))
	}
	for q := 0; q < n.queues; q++ {
		file(filepath.Join(ifd, "queues", fmt.Sprintf("rx-%d", q), "rps_cpus"), "0")
		file(filepath.Join(ifd, "queues", fmt.Sprintf("tx-%d", q), "tx_maxrate"), "0")
	}
	must(os.Symlink(filepath.Join("..", "..", "..", n.pci.addr), filepath.Join(ifd, "device")))
	dev := filepath.Join(sys, "devices", "pci0000:00", n.pci.addr)
	file(filepath.Join(dev, "vendor"), n.pci.vendor)
	file(filepath.Join(dev, "device"), n.pci.device)
	file(filepath.Join(dev, "subsystem_vendor"), n.pci.subVendor)
	file(filepath.Join(dev, "subsystem_device"), n.pci.subDevice)
	file(filepath.Join(dev, "class"), "0x020000")
	must(os.Symlink("../../../bus/pci/drivers/"+n.pci.driver, filepath.Join(dev, "driver")))
	must(os.Symlink("../../../bus/pci", filepath.Join(dev, "subsystem")))
	if n.udev != nil {
		var s string
		for _, k := range sortedKeys(n.udev) {
			s += "E:" + k + "=" + n.udev[k] + "\n"
		}
		file(filepath.Join(dir, "udev", fmt.Sprintf("n%d", n.index)), "I:1234567\n"+s)
	}
	if n.drv == nil {
		return // captured without ethtool answers
	}
	drv := *n.drv
	if drv.Info != nil && drv.Info.BusInfo == "" {
		info := *drv.Info
		info.BusInfo = n.pci.addr
		drv.Info = &info
	}
	if len(n.einval) > 0 {
		drv.Errors = maps.Clone(drv.Errors)
		if drv.Errors == nil {
			drv.Errors = map[string]string{}
		}
		for _, a := range n.einval {
			drv.Errors[a] = "invalid argument"
		}
	}
	js(filepath.Join(dir, "ethtool", n.iface+".json"), drv)
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func file(p, v string) {
	must(os.MkdirAll(filepath.Dir(p), 0o755))
	must(os.WriteFile(p, []byte(v+"\n"), 0o644))
}

func js(p string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	must(err)
	file(p, string(b))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
