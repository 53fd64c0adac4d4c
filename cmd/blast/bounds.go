package main

import (
	"fmt"

	"github.com/blastnet/blast/control"
	"github.com/blastnet/blast/control/wire"
)

// The bounds of the numeric flags of blast client that the conversion to
// a control.Config would lose: a count of 0 that Defaults reads as "unset",
// seconds or milliseconds that overflow a time.Duration, a NaN that no
// comparison refuses. Each error is one line naming the flag, its value and
// the range, in iperf3's words where iperf3 has some (iperf_error.c).
func (f *clientFlags) checkNumbers() error {
	fs := f.fs
	switch {
	case f.parallel < 1 || f.parallel > wire.MaxStreams:
		return fmt.Errorf("-P %d: invalid number of parallel streams (min = 1, max = %d)", f.parallel, wire.MaxStreams)
	case f.secs < 0 || f.secs > wire.MaxTime:
		return fmt.Errorf("-t %d: test duration valid values are 0 to %d seconds", f.secs, wire.MaxTime)
	case f.omit < 0 || f.omit > wire.MaxOmit:
		return fmt.Errorf("-O %d: bogus value for --omit (min = 0, max = %d seconds)", f.omit, wire.MaxOmit)
	case !validInterval(f.interval):
		return fmt.Errorf("-i %g: invalid report interval (min = 0.1, max = 60 seconds; 0: none)", f.interval)
	case f.connTimeout < 0 || f.connTimeout > wire.MaxTime*1000:
		return fmt.Errorf("--connect-timeout %d: must be 0 (the system's) to %d ms", f.connTimeout, wire.MaxTime*1000)
	case fs.Changed("rcv-timeout") && (f.rcvTimeout < int(control.MinRcvTimeout.Milliseconds()) || f.rcvTimeout > wire.MaxTime*1000):
		return fmt.Errorf("--rcv-timeout %d: receive timeout value is incorrect or not in range (%d to %d ms)", f.rcvTimeout, control.MinRcvTimeout.Milliseconds(), wire.MaxTime*1000)
	case f.sndTimeout < 0 || f.sndTimeout > wire.MaxTime*1000:
		return fmt.Errorf("--snd-timeout %d: send timeout value is incorrect or not in range (0 to %d ms)", f.sndTimeout, wire.MaxTime*1000)
	case f.mss < 0 || f.mss > wire.MaxMSS:
		return fmt.Errorf("-M %d: must be 0 (the system's) to %d", f.mss, wire.MaxMSS)
	}
	return nil
}

// validInterval reports whether secs is a report interval iperf3 takes:
// 0 (none) or 0.1 to 60 seconds; NaN and the infinities are not.
func validInterval(secs float64) bool {
	return secs == 0 || (secs >= 0.1 && secs <= 60)
}

// checkServerCounts refuses a count of 0 or less for the server's flags
// whose 0 means "the default" to control.ServerConfig.Defaults: on the
// command line the user's 0 is no request for the default.
func checkServerCounts(counts ...serverCount) error {
	for _, c := range counts {
		if c.v < 1 {
			return fmt.Errorf("%s %d: must be at least 1", c.flag, c.v)
		}
	}
	return nil
}

// serverCount is a count flag of blast server and its value.
type serverCount struct {
	flag string
	v    int
}
