package engine

import "time"

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
