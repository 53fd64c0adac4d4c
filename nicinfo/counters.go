package nicinfo

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Canonical names of the counters that matter for link diagnosis.
const (
	LateCollisions = "late_collisions"
	// ExcessiveCollisions counts frames given up after 16 collisions in a
	// row (aFramesAbortedDueToXSColls, sysfs tx_aborted_errors): only a
	// half-duplex MAC has them. Fast full-duplex NICs may use
	// tx_aborted_errors for other discards, so the rules read it as
	// collisions only at half duplex or beside counted collisions.
	ExcessiveCollisions = "excessive_collisions"
	FCSErrors           = "fcs_errors"
	AlignErrors         = "align_errors"
	Runts               = "runts"
	HostDrops           = "host_drops"
	Deferrals           = "deferrals"
	LinkDownEvents      = "link_down_events"
	Collisions          = "collisions"
)

// keyRule says how one canonical counter is computed: the first driver (-S) key
// that exists wins; otherwise the first generic (sysfs statistics) key that
// exists. Sum lists are added up (each part must exist to count).
type keyRule struct {
	driver  []string // alternatives among -S keys, first present wins
	generic []string // alternatives among sysfs statistics, used when no driver key
	sumDrv  []string // -S keys added on top (host drops the kernel does not see)
	sumGen  []string // generic keys added together (instead of generic)
}

// keyTables maps a driver to its canonical counters. "" is the default for
// drivers not listed; listed drivers fall back to it for names they omit.
var keyTables = map[string]map[string]keyRule{
	"": {
		LateCollisions:      {generic: []string{"tx_window_errors"}},
		ExcessiveCollisions: {generic: []string{"tx_aborted_errors"}},
		FCSErrors:           {generic: []string{"rx_crc_errors"}},
		AlignErrors:         {generic: []string{"rx_frame_errors"}},
		HostDrops:           {sumGen: []string{"rx_missed_errors", "rx_fifo_errors", "rx_over_errors"}},
		Collisions:          {generic: []string{"collisions"}},
	},
	"e1000": intelKeys, "e1000e": intelKeys, "igb": intelKeys, "igc": intelKeys,
	"ixgbe": {
		FCSErrors:  {driver: []string{"rx_crc_errors"}, generic: []string{"rx_crc_errors"}},
		Runts:      {driver: []string{"rx_short_length_errors"}},
		HostDrops:  {sumGen: []string{"rx_missed_errors", "rx_fifo_errors", "rx_over_errors"}, sumDrv: []string{"rx_no_buffer_count", "rx_no_dma_resources"}},
		Collisions: {generic: []string{"collisions"}},
	},
	"3c59x": {
		Deferrals:           {driver: []string{"tx_deferred"}},
		Collisions:          {generic: []string{"collisions"}},
		ExcessiveCollisions: {driver: []string{"tx_max_collisions"}, generic: []string{"tx_aborted_errors"}},
	},
	"mlx5_core": {
		FCSErrors:      {driver: []string{"rx_crc_errors_phy"}, generic: []string{"rx_crc_errors"}},
		Runts:          {driver: []string{"rx_undersize_pkts_phy"}},
		HostDrops:      {sumGen: []string{"rx_missed_errors", "rx_fifo_errors", "rx_over_errors"}, sumDrv: []string{"rx_out_of_buffer", "rx_discards_phy"}},
		LinkDownEvents: {driver: []string{"link_down_events_phy"}},
	},
	"virtio_net": {
		HostDrops: {sumGen: []string{"rx_missed_errors", "rx_fifo_errors", "rx_over_errors"}, sumDrv: []string{"rx_drops"}},
	},
}

var intelKeys = map[string]keyRule{
	LateCollisions: {driver: []string{"tx_abort_late_coll"}, generic: []string{"tx_window_errors"}},
	FCSErrors:      {driver: []string{"rx_crc_errors"}, generic: []string{"rx_crc_errors"}},
	AlignErrors:    {driver: []string{"rx_align_errors"}, generic: []string{"rx_frame_errors"}},
	Runts:          {driver: []string{"rx_short_length_errors"}},
	HostDrops:      {sumGen: []string{"rx_missed_errors", "rx_fifo_errors", "rx_over_errors"}, sumDrv: []string{"rx_no_buffer_count"}},
	Deferrals:      {driver: []string{"tx_deferred_ok"}},
	Collisions:     {generic: []string{"collisions"}},
}

// keyNames lists the canonical names in display order.
var keyNames = []string{LateCollisions, Collisions, ExcessiveCollisions, FCSErrors, AlignErrors, Runts, HostDrops, Deferrals, LinkDownEvents}

func keyRuleFor(driver, name string) (keyRule, bool) {
	if t, ok := keyTables[driver]; ok {
		if r, ok := t[name]; ok {
			return r, true
		}
	}
	r, ok := keyTables[""][name]
	return r, ok
}

// keyCounters computes the canonical counters and where each came from.
func keyCounters(driver string, generic, drv map[string]uint64) (map[string]uint64, map[string]string) {
	vals := map[string]uint64{}
	srcs := map[string]string{}
	for _, name := range keyNames {
		r, ok := keyRuleFor(driver, name)
		if !ok {
			continue
		}
		v, src, ok := r.eval(generic, drv)
		if ok {
			vals[name] = v
			srcs[name] = src
		}
	}
	if len(vals) == 0 {
		return nil, nil
	}
	return vals, srcs
}

func (r keyRule) eval(generic, drv map[string]uint64) (uint64, string, bool) {
	var parts []string
	var sum uint64
	found := false
	for _, k := range r.driver {
		if v, ok := drv[k]; ok {
			sum, found = v, true
			parts = append(parts, k+" (-S)")
			break
		}
	}
	if !found {
		for _, k := range r.generic {
			if v, ok := generic[k]; ok {
				sum, found = v, true
				parts = append(parts, k)
				break
			}
		}
	}
	for _, k := range r.sumGen {
		if v, ok := generic[k]; ok {
			sum += v
			found = true
			parts = append(parts, k)
		}
	}
	for _, k := range r.sumDrv {
		if v, ok := drv[k]; ok {
			sum += v
			found = true
			parts = append(parts, k+" (-S)")
		}
	}
	return sum, strings.Join(parts, " + "), found
}

// keyComponents lists the raw counters ("counters/x", "driver/y") a canonical
// counter would be computed from, to propagate resets.
func keyComponents(driver, name string) []string {
	r, ok := keyRuleFor(driver, name)
	if !ok {
		return nil
	}
	var out []string
	for _, k := range append(append([]string{}, r.driver...), r.sumDrv...) {
		out = append(out, "driver/"+k)
	}
	for _, k := range append(append([]string{}, r.generic...), r.sumGen...) {
		out = append(out, "counters/"+k)
	}
	return out
}

// Snapshot is the counters of one interface at one moment.
type Snapshot struct {
	Name           string            `json:"name"`
	Index          int               `json:"ifindex"`
	Driver         string            `json:"driver,omitempty"`
	Time           time.Time         `json:"time"`
	Counters       map[string]uint64 `json:"counters"`
	DriverStats    map[string]uint64 `json:"driver_stats,omitempty"`
	CarrierChanges *uint64           `json:"carrier_changes,omitempty"`
}

// Deltas is the change of every counter between two snapshots. A counter that
// went backwards (driver reload, device reset, 32-bit wrap) is not subtracted:
// it is listed in Resets and left out of the maps, and the rules that need it
// are skipped.
type Deltas struct {
	Name           string            `json:"name"`
	Interval       time.Duration     `json:"interval_ns"`
	Counters       map[string]uint64 `json:"counters"`
	DriverStats    map[string]uint64 `json:"driver_stats,omitempty"`
	Key            map[string]uint64 `json:"key_counters,omitempty"`
	CarrierChanges *uint64           `json:"carrier_changes,omitempty"`
	// Restarted says why the counters are counted from zero instead of
	// from the first snapshot: the interface was recreated between the two
	// (a driver reload, a reboot), so its counters had restarted. The
	// changes are then what it counted since it came up again; Interval
	// and CarrierChanges are unknown (0 and nil).
	Restarted string `json:"restarted,omitempty"`
	// Resets lists the counters that went backwards, as "counters/NAME",
	// "driver/NAME", "key/NAME" or "carrier_changes".
	Resets []string `json:"resets,omitempty"`
}

// Delta subtracts two snapshots of the same interface. Counters present in only
// one snapshot are absent from the result.
func Delta(before, after *Snapshot) (*Deltas, error) {
	if before == nil || after == nil {
		return nil, fmt.Errorf("nicinfo: delta: missing snapshot")
	}
	if before.Name != after.Name {
		return nil, fmt.Errorf("nicinfo: delta: snapshots of different interfaces %q and %q", before.Name, after.Name)
	}
	if before.Index != after.Index && before.Index != 0 && after.Index != 0 {
		return nil, fmt.Errorf("nicinfo: delta %s: ifindex changed from %d to %d: the interface was recreated", before.Name, before.Index, after.Index)
	}
	d := &Deltas{Name: after.Name}
	if !before.Time.IsZero() && !after.Time.IsZero() {
		d.Interval = after.Time.Sub(before.Time) // else unknown: a capture without its time
	}
	var resets []string
	d.Counters = diffMap(before.Counters, after.Counters, "counters/", &resets)
	d.DriverStats = diffMap(before.DriverStats, after.DriverStats, "driver/", &resets)
	if before.CarrierChanges != nil && after.CarrierChanges != nil {
		if *after.CarrierChanges >= *before.CarrierChanges {
			v := *after.CarrierChanges - *before.CarrierChanges
			d.CarrierChanges = &v
		} else {
			resets = append(resets, "carrier_changes")
		}
	}
	driver := after.Driver
	key, _ := keyCounters(driver, d.Counters, d.DriverStats)
	isReset := make(map[string]bool, len(resets))
	for _, r := range resets {
		isReset[r] = true
	}
	for _, name := range keyNames {
		for _, c := range keyComponents(driver, name) {
			if isReset[c] {
				delete(key, name)
				resets = append(resets, "key/"+name)
				break
			}
		}
	}
	d.Key = key
	sort.Strings(resets)
	d.Resets = resets
	return d, nil
}

func diffMap(a, b map[string]uint64, prefix string, resets *[]string) map[string]uint64 {
	if a == nil || b == nil {
		return nil
	}
	out := make(map[string]uint64, len(b))
	for k, vb := range b {
		va, ok := a[k]
		if !ok {
			continue
		}
		if vb < va {
			*resets = append(*resets, prefix+k)
			continue
		}
		out[k] = vb - va
	}
	return out
}

// NonZero returns the nonzero deltas as "counters/NAME" or "driver/NAME" keys,
// sorted, which is what a result line should show.
func (d *Deltas) NonZero() []string {
	var out []string
	for k, v := range d.Counters {
		if v != 0 {
			out = append(out, "counters/"+k)
		}
	}
	for k, v := range d.DriverStats {
		if v != 0 {
			out = append(out, "driver/"+k)
		}
	}
	sort.Strings(out)
	return out
}
