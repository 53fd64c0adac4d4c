// Package hostload reads what a host spends while a test runs, lmbench's
// and vmstat's way: CPU time split into user, system (with interrupt
// handling), idle and steal (the time a virtual machine's hypervisor gave
// its CPUs to others: on a shared VM the cause of a slow run that nothing
// on the host shows), interrupts and context switches per second, and the
// packets per second of the interface that carries the test.
//
// Take a Sample before and after a period; Between turns two samples into
// the rates of the period.
package hostload

import (
	"time"
)

// Sample is the host's counters at one moment.
type Sample struct {
	At time.Time
	// CPU jiffies since boot, all CPUs: user (with nice and guest),
	// system (with irq and softirq), idle (with iowait), and steal.
	User, System, Idle, Steal   uint64
	Interrupts, ContextSwitches uint64
	// Iface is the interface whose packets are counted ("": none).
	Iface                string
	RxPackets, TxPackets uint64
}

// Load is what a host spent over a period, as rates.
type Load struct {
	Seconds float64 `json:"seconds"`
	// Percent of all CPUs' time.
	User   float64 `json:"cpu_user_percent"`
	System float64 `json:"cpu_system_percent"`
	Idle   float64 `json:"cpu_idle_percent"`
	Steal  float64 `json:"cpu_steal_percent"`
	// Per second.
	Interrupts      float64 `json:"interrupts_per_sec"`
	ContextSwitches float64 `json:"context_switches_per_sec"`
	Iface           string  `json:"iface,omitempty"`
	RxPackets       float64 `json:"rx_packets_per_sec"`
	TxPackets       float64 `json:"tx_packets_per_sec"`
}

// Between is the load from a to b.
func Between(a, b Sample) Load {
	l := Load{Seconds: b.At.Sub(a.At).Seconds(), Iface: b.Iface}
	total := float64((b.User + b.System + b.Idle + b.Steal) - (a.User + a.System + a.Idle + a.Steal))
	if total > 0 {
		l.User = 100 * float64(b.User-a.User) / total
		l.System = 100 * float64(b.System-a.System) / total
		l.Idle = 100 * float64(b.Idle-a.Idle) / total
		l.Steal = 100 * float64(b.Steal-a.Steal) / total
	}
	if l.Seconds > 0 {
		per := func(x, y uint64) float64 { return float64(y-x) / l.Seconds }
		l.Interrupts = per(a.Interrupts, b.Interrupts)
		l.ContextSwitches = per(a.ContextSwitches, b.ContextSwitches)
		if a.Iface == b.Iface && b.Iface != "" {
			l.RxPackets = per(a.RxPackets, b.RxPackets)
			l.TxPackets = per(a.TxPackets, b.TxPackets)
		}
	}
	return l
}
