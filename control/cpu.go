package control

import (
	"time"

	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/engine"
)

// cpuMeter measures CPUUtil from a starting point. The figure covers the
// whole process: a server running several tests at once reports what all
// of them used.
type cpuMeter struct {
	wall   time.Time
	cpu    engine.CPUTimes
	pauses engine.PauseHist
}

func startCPU() cpuMeter {
	return cpuMeter{wall: time.Now(), cpu: engine.ProcessCPU(), pauses: engine.ReadPauses()}
}

func (m cpuMeter) read() result.CPUUtil {
	d := engine.ProcessCPU().Sub(m.cpu)
	wall := time.Since(m.wall)
	if wall <= 0 {
		return result.CPUUtil{}
	}
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(wall) }
	p := engine.ReadPauses().Since(m.pauses)
	return result.CPUUtil{Total: pct(d.Total()), User: pct(d.User), System: pct(d.System), UserSeconds: d.User.Seconds(), SystemSeconds: d.System.Seconds(), Pauses: &p}
}
