package engine

import "time"

// Free is implemented by a Backend whose every blocking data call goes
// through the flow's calls (Flow.Read, Flow.Send, Flow.Sendfile,
// WriteAll): Run may run its flows free.
type Free interface {
	Backend
	// RunsFree reports whether the backend's calls in that direction all
	// go through the flow (a backend may convert one direction only).
	RunsFree(send bool) bool
}

// free is a free flow's state, owned by its goroutine.
type free struct {
	on        bool
	sndLimit  time.Duration // the timeout a send would have had locked: 0 none
	rcvLimit  time.Duration
	base      time.Time // monotonic origin of the times below
	yieldAt   time.Duration
	segTid    int // the thread the current accounting segment runs on
	segCPU    CPUTimes
	segWait   time.Duration
	segVol    int64
	segInvol  int64
	yields    int64
	migrated  int64         // segments that changed thread between yields (not counted)
	prevSnd   time.Duration // the socket's timeouts before Run bounded them
	prevRcv   time.Duration
	restoreFD int
}
