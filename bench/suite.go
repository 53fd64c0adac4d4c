package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/blastnet/blast/netlab"
)

// Config is one run of the suite.
type Config struct {
	Blast   string    // the blast binary
	Dir     string    // the blast source tree (for its commit)
	Quick   bool      // the short suite
	Pairs   int       // rounds per workload: blast and each peer once
	Secs    int       // seconds per run
	Compare bool      // also run `blast compare --lab` (TCP and UDP)
	Only    []string  // workload IDs to run (empty: the suite's set)
	All     bool      // also the Extra workloads
	Log     io.Writer // progress
	// BlastBuilt: bench built Blast from Dir (else the user gave it).
	BlastBuilt bool
	// Iperf3 is the modern iperf3 to run as a second peer: a path
	// (checked: 3.16 or later), "" to look for one on PATH, "none" for
	// none.
	Iperf3 string
}

// Results is everything one run measured.
type Results struct {
	Date    string  `json:"date"` // RFC 3339, UTC
	Mode    string  `json:"mode"` // quick or full
	Pairs   int     `json:"pairs"`
	Secs    int     `json:"secs_per_run"`
	Machine Machine `json:"machine"`
	Caps    Caps    `json:"blast_caps"`
	// Iperf3 are the iperf3 binaries measured: Debian's, then the
	// modern one when there was one.
	Iperf3    []Iperf3         `json:"iperf3"`
	Lab       string           `json:"lab"`
	Workloads []WorkloadResult `json:"workloads"`
	Targets   []TargetResult   `json:"targets"`
	Compare   []CompareTable   `json:"compare,omitempty"`
	Elapsed   float64          `json:"elapsed_sec"`
}

// iperf3 returns the measured iperf3 of key, or nil.
func (r *Results) iperf3(key string) *Iperf3 {
	for i := range r.Iperf3 {
		if r.Iperf3[i].Key == key {
			return &r.Iperf3[i]
		}
	}
	return nil
}

// WorkloadResult is one workload's rounds and their summary.
type WorkloadResult struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"`
	Blast   string `json:"blast"`
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
	// Rounds: blast, then each peer that runs, alternately.
	Rounds []Round `json:"rounds,omitempty"`
	// Summaries over the rounds that measured something.
	BlastValue Summary                `json:"blast_value"`
	BlastLoss  *Summary               `json:"blast_loss,omitempty"`
	BlastProcs map[string]ProcSummary `json:"blast_procs,omitempty"` // by role
	// BlastSpread summarizes Sample.Spread over the rounds (nil: not
	// measured).
	BlastSpread *Summary     `json:"blast_stream_spread,omitempty"`
	Peers       []PeerResult `json:"peers"`
}

// peer returns the result of the peer with key, or nil.
func (wr *WorkloadResult) peer(key string) *PeerResult {
	for i := range wr.Peers {
		if wr.Peers[i].Key == key {
			return &wr.Peers[i]
		}
	}
	return nil
}

// PeerResult is one peer of a workload, summarized over the rounds.
type PeerResult struct {
	Key     string `json:"key"`
	Label   string `json:"label"`
	Version string `json:"version,omitempty"` // the tool's version (iperf3: "3.21")
	Skipped string `json:"skipped,omitempty"`
	// Value, Loss and Procs summarize the peer's own runs.
	Value Summary                `json:"value"`
	Loss  *Summary               `json:"loss,omitempty"`
	Procs map[string]ProcSummary `json:"procs,omitempty"`
	// Spread is as WorkloadResult.BlastSpread, for this peer.
	Spread *Summary `json:"stream_spread,omitempty"`
	// Ratio is blast/peer of the metric, per round.
	Ratio Summary `json:"ratio"`
	// SenderCPURatio is the per-round ratio of the senders' CPU-seconds
	// per GB, blast/peer (lower is better for blast).
	SenderCPURatio Summary `json:"sender_cpu_per_gb_ratio"`
	// LatencyRatio is blast/peer of each round-trip percentile ("p50",
	// "p99"), per round, for latency workloads.
	LatencyRatio map[string]Summary `json:"latency_ratio,omitempty"`
}

// Round is one blast run and the run of each peer that followed it.
type Round struct {
	Blast Sample    `json:"blast"`
	Peers []PeerRun `json:"peers"`
}

// PeerRun is one peer's run in a round and its ratio to blast's.
type PeerRun struct {
	Key    string `json:"key"`
	Sample Sample `json:"sample"`
	Ratio  Num    `json:"ratio"` // blast/peer
}

// ProcSummary summarizes one role's processes over the rounds.
type ProcSummary struct {
	CPUPerGB      Summary `json:"cpu_sec_per_gb"`
	SwitchesPerGB Summary `json:"switches_per_gb"`
	MaxRSSKB      Summary `json:"max_rss_kb"`
}

// Run builds a lab, runs the workloads and returns what they measured.
// The lab is gone when Run returns, whatever happened.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("bench: needs root to build its netns lab (run make bench as root)")
	}
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	began := time.Now()
	res := &Results{Date: began.UTC().Format(time.RFC3339), Mode: "full", Pairs: cfg.Pairs, Secs: cfg.Secs}
	if cfg.Quick {
		res.Mode = "quick"
	}
	res.Machine = DescribeMachine(ctx, cfg.Dir, cfg.Blast, cfg.BlastBuilt)
	res.Caps = DetectCaps(ctx, cfg.Blast)
	fmt.Fprintf(log, "bench: %s mode, %d rounds of %d s; %s, kernel %s, %d cores, blast %s\n",
		res.Mode, cfg.Pairs, cfg.Secs, res.Machine.CPUModel, res.Machine.Kernel, res.Machine.Cores, res.Machine.BlastCommit)

	// A wrong --iperf3 fails before the lab; one on PATH is looked for
	// once Debian's is installed (it is not the modern one).
	var modern *Iperf3
	if cfg.Iperf3 != "" && cfg.Iperf3 != "none" {
		var err error
		if modern, err = ModernIperf3Path(ctx, cfg.Iperf3); err != nil {
			return nil, err
		}
	}

	lab, err := netlab.New(netlab.Direct, netlab.Options{})
	if err != nil {
		return nil, err
	}
	closeLab := func() {
		// A namespace stays when another process still holds its mount
		// (a long-running `ip netns exec` started while it existed).
		if err := lab.Close(); err != nil {
			fmt.Fprintf(log, "bench: %v\n", err)
		}
	}
	defer closeLab()
	env := &Env{Lab: lab, Blast: cfg.Blast, Secs: cfg.Secs, Caps: res.Caps, CPUs: allowedCPUs(),
		counts: map[string]int64{}}
	// Until the peers are installed, Debian's iperf3 is assumed present;
	// Unavailable is asked again after the install.
	env.Iperf3 = &Iperf3{Key: PeerIperf3, Path: DebianIperf3}
	if err := env.Check(); err != nil {
		return nil, err
	}
	res.Lab = lab.String()

	// Decide what runs, then install the peers that needs.
	var run []Workload
	var tools []string
	for _, w := range Workloads() {
		wr := WorkloadResult{ID: w.ID, Title: w.Title, Metric: w.Metric, Unit: w.Unit, Blast: w.Blast.Label}
		for _, p := range w.Peers {
			wr.Peers = append(wr.Peers, PeerResult{Key: p.Key, Label: p.Label})
		}
		switch {
		case len(cfg.Only) > 0 && !slices.Contains(cfg.Only, w.ID):
			continue
		case len(cfg.Only) == 0 && cfg.Quick && !w.Quick:
			wr.Skipped = "not in the quick suite (make bench runs it)"
			if w.Extra && !cfg.All {
				wr.Skipped = "not in the default suite (blastbench -all runs it)"
			}
			if w.Unavailable != nil {
				if why := w.Unavailable(env); why != "" {
					wr.Skipped = why
				}
			}
		case len(cfg.Only) == 0 && w.Extra && !cfg.All:
			wr.Skipped = "not in the default suite (blastbench -all runs it)"
		case w.Unavailable != nil && w.Unavailable(env) != "":
			wr.Skipped = w.Unavailable(env)
		default:
			run = append(run, w)
			for _, sd := range append([]Side{w.Blast}, w.Peers...) {
				if sd.Tool != "" && !slices.Contains(tools, sd.Tool) && (sd.Unavailable == nil || sd.Unavailable(env) == "") {
					tools = append(tools, sd.Tool)
				}
			}
		}
		res.Workloads = append(res.Workloads, wr)
	}
	if err := InstallPeers(ctx, tools, log); err != nil {
		return nil, err
	}
	env.Iperf3 = nil
	debian := DebianIperf3Path()
	if debian != "" {
		if ip, err := probeIperf3(ctx, runVersion, PeerIperf3, debian); err == nil {
			env.Iperf3 = ip
		} else {
			fmt.Fprintf(log, "bench: %v\n", err)
		}
	}
	if cfg.Iperf3 == "" {
		modern = FindModernIperf3(ctx, os.Getenv("PATH"), debian)
	}
	if modern != nil && realPath(modern.Path) == realPath(debian) {
		fmt.Fprintf(log, "bench: %s is the iperf3 measured as Debian's: no second iperf3 column\n", modern.Path)
		modern = nil
	}
	if modern != nil {
		fmt.Fprintf(log, "bench: modern iperf3: %s (%s)\n", modern.Path, modern.VersionLine)
	} else {
		fmt.Fprintf(log, "bench: no iperf3 %s or later: only Debian's iperf3 is measured (blastbench --iperf3 PATH adds one)\n", ModernIperf3)
	}
	env.Modern = modern
	versions := map[string]string{"blast": "the blast measured"}
	for _, ip := range []*Iperf3{env.Iperf3, env.Modern} {
		if ip != nil {
			res.Iperf3 = append(res.Iperf3, *ip)
			res.Machine.Peers[ip.Key] = ip.VersionLine + " (" + ip.Path + ")"
			versions[ip.Key] = ip.Version.String()
		}
	}
	for _, t := range tools {
		if t != "iperf3" {
			res.Machine.Peers[t] = toolVersion(ctx, t)
			versions[t] = res.Machine.Peers[t]
		}
	}
	fmt.Fprintf(log, "bench: %d workloads, about %s\n", len(run), estimate(run, env, cfg.Pairs, cfg.Compare).Round(10*time.Second))

	for _, w := range run {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		i := slices.IndexFunc(res.Workloads, func(r WorkloadResult) bool { return r.ID == w.ID })
		res.Workloads[i] = runWorkload(ctx, env, w, cfg.Pairs, res.Workloads[i], versions, log)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	closeLab() // compare builds its own lab
	if cfg.Compare {
		for _, udp := range []bool{false, true} {
			t, err := RunCompare(ctx, cfg.Blast, udp, cfg.Secs)
			if err != nil {
				fmt.Fprintf(log, "bench: blast compare: %v\n", err)
			}
			res.Compare = append(res.Compare, t)
		}
	}
	res.Targets = EvalTargets(res)
	res.Elapsed = time.Since(began).Seconds()
	return res, ctx.Err()
}

// estimate is a rough duration of the runs: each run lasts its seconds
// plus about 0.4 s of starting and stopping; a calibration about two
// runs; compare about 17 backend pairs.
func estimate(ws []Workload, e *Env, rounds int, compare bool) time.Duration {
	runs := 0
	for _, w := range ws {
		runs += rounds * (1 + len(runnable(w, e)))
		if w.Calibrate != nil {
			runs += 2
		}
	}
	if compare {
		runs += 17
	}
	return time.Duration(float64(runs) * (float64(e.Secs) + 0.4) * float64(time.Second))
}

// runnable are the peers of w that can run here.
func runnable(w Workload, e *Env) []Side {
	var out []Side
	for _, p := range w.Peers {
		if p.Unavailable == nil || p.Unavailable(e) == "" {
			out = append(out, p)
		}
	}
	return out
}

// runWorkload calibrates, then runs blast and each peer alternately.
// giveUp is how many failed rounds, before any that worked, make bench
// stop running a peer in a workload.
const giveUp = 2

// versions holds each peer key's tool version.
func runWorkload(ctx context.Context, env *Env, w Workload, rounds int, wr WorkloadResult, versions map[string]string, log io.Writer) WorkloadResult {
	fmt.Fprintf(log, "bench: %s: %s\n", w.ID, w.Title)
	peers := runnable(w, env)
	for i, p := range w.Peers {
		if p.Unavailable != nil {
			wr.Peers[i].Skipped = p.Unavailable(env)
		}
		if wr.Peers[i].Skipped == "" {
			wr.Peers[i].Version = versions[p.Key]
		}
	}
	if w.Calibrate != nil {
		if err := w.Calibrate(ctx, env); err != nil {
			wr.Error = err.Error()
			fmt.Fprintf(log, "bench: %s: %v\n", w.ID, err)
			return wr
		}
	}
	failures := map[string]int{} // a peer's failed runs, while it has had no other
	for i := range rounds {
		if ctx.Err() != nil {
			break
		}
		r := Round{Blast: w.Blast.Run(ctx, env)}
		line := fmt.Sprintf("bench: %s round %d: blast %s %s", w.ID, i+1, fmtValue(float64(r.Blast.Value)), w.Unit)
		errs := sampleErr("blast", r.Blast)
		for _, p := range peers {
			if ctx.Err() != nil {
				break
			}
			if failures[p.Key] >= giveUp {
				continue
			}
			smp := p.Run(ctx, env)
			if smp.Err == "" {
				failures[p.Key] = -1 << 30 // it can run: never give up on it
			} else if failures[p.Key]++; failures[p.Key] == giveUp {
				pr := wr.peer(p.Key)
				pr.Skipped = fmt.Sprintf("failed in each of its first %d rounds, not run again: %s", giveUp, firstLines(smp.Err, 1))
			}
			pr := PeerRun{Key: p.Key, Sample: smp, Ratio: Num(Ratio(float64(r.Blast.Value), float64(smp.Value)))}
			r.Peers = append(r.Peers, pr)
			line += fmt.Sprintf(", %s %s (ratio %s)", p.Key, fmtValue(float64(smp.Value)), fmtRatio(float64(pr.Ratio)))
			errs += sampleErr(p.Key, smp)
		}
		if ctx.Err() != nil {
			break
		}
		wr.Rounds = append(wr.Rounds, r)
		fmt.Fprintf(log, "%s%s\n", line, errs)
	}
	summarize(&wr)
	return wr
}

func sampleErr(who string, s Sample) string {
	if s.Err == "" {
		return ""
	}
	return "\n  " + who + ": " + s.Err
}

// summarize fills the summaries from the rounds.
func summarize(wr *WorkloadResult) {
	var bv, bl []float64
	for _, r := range wr.Rounds {
		bv = append(bv, float64(r.Blast.Value))
		bl = append(bl, float64(r.Blast.Loss))
	}
	wr.BlastValue = Summarize(bv)
	if s := Summarize(bl); s.N > 0 {
		wr.BlastLoss = &s
	}
	wr.BlastProcs = procSummaries(blastSamples(wr.Rounds))
	wr.BlastSpread = spreads(blastSamples(wr.Rounds))
	for i := range wr.Peers {
		summarizePeer(&wr.Peers[i], wr.Rounds)
	}
}

// spreads summarizes the samples' stream spreads, nil when none has one.
func spreads(samples []Sample) *Summary {
	var v []float64
	for _, s := range samples {
		if s.Err == "" && s.Spread != nil {
			v = append(v, *s.Spread)
		}
	}
	if len(v) == 0 {
		return nil
	}
	sum := Summarize(v)
	return &sum
}

func blastSamples(rounds []Round) []Sample {
	var out []Sample
	for _, r := range rounds {
		out = append(out, r.Blast)
	}
	return out
}

// summarizePeer fills pr's summaries from its runs in the rounds.
func summarizePeer(pr *PeerResult, rounds []Round) {
	var pv, ratio, pl, cpuRatio []float64
	lat := map[string][]float64{}
	var samples []Sample
	for _, r := range rounds {
		for _, run := range r.Peers {
			if run.Key != pr.Key {
				continue
			}
			p := run.Sample
			samples = append(samples, p)
			pv = append(pv, float64(p.Value))
			pl = append(pl, float64(p.Loss))
			ratio = append(ratio, float64(run.Ratio))
			if r.Blast.Err != "" || p.Err != "" {
				continue
			}
			bs, ps := r.Blast.proc("sender"), p.proc("sender")
			if bs != nil && ps != nil {
				cpuRatio = append(cpuRatio, Ratio(float64(bs.CPUPerGB), float64(ps.CPUPerGB)))
			}
			if b, q := r.Blast.Latency, p.Latency; b != nil && q != nil {
				lat["p50"] = append(lat["p50"], Ratio(float64(b.P50), float64(q.P50)))
				lat["p99"] = append(lat["p99"], Ratio(float64(b.P99), float64(q.P99)))
			}
		}
	}
	pr.Value, pr.Ratio = Summarize(pv), Summarize(ratio)
	if s := Summarize(pl); s.N > 0 {
		pr.Loss = &s
	}
	pr.SenderCPURatio = Summarize(cpuRatio)
	pr.Procs = procSummaries(samples)
	pr.Spread = spreads(samples)
	for k, v := range lat {
		if s := Summarize(v); s.N > 0 {
			if pr.LatencyRatio == nil {
				pr.LatencyRatio = map[string]Summary{}
			}
			pr.LatencyRatio[k] = s
		}
	}
}

func procSummaries(samples []Sample) map[string]ProcSummary {
	out := map[string]ProcSummary{}
	for _, role := range []string{"sender", "receiver"} {
		var cpu, sw, rss []float64
		for _, s := range samples {
			if s.Err != "" {
				continue
			}
			if ps := s.proc(role); ps != nil {
				cpu = append(cpu, float64(ps.CPUPerGB))
				sw = append(sw, float64(ps.SwitchesPerGB))
				rss = append(rss, float64(ps.MaxRSSKB))
			}
		}
		if len(rss) > 0 {
			out[role] = ProcSummary{CPUPerGB: Summarize(cpu), SwitchesPerGB: Summarize(sw), MaxRSSKB: Summarize(rss)}
		}
	}
	return out
}
