package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/blastnet/blast/internal/netlab"
)

// Config is one run of the suite.
type Config struct {
	Blast   string    // the blast binary
	Dir     string    // the blast source tree (for its commit)
	Quick   bool      // the short suite
	Pairs   int       // blast/peer pairs per workload
	Secs    int       // seconds per run
	Compare bool      // also run `blast compare --lab` (TCP and UDP)
	Only    []string  // workload IDs to run (empty: the suite's set)
	Log     io.Writer // progress
}

// Results is everything one run measured.
type Results struct {
	Date      string           `json:"date"` // RFC 3339, UTC
	Mode      string           `json:"mode"` // quick or full
	Pairs     int              `json:"pairs"`
	Secs      int              `json:"secs_per_run"`
	Machine   Machine          `json:"machine"`
	Caps      Caps             `json:"blast_caps"`
	Lab       string           `json:"lab"`
	Workloads []WorkloadResult `json:"workloads"`
	Targets   []TargetResult   `json:"targets"`
	Compare   []CompareTable   `json:"compare,omitempty"`
	Elapsed   float64          `json:"elapsed_sec"`
}

// WorkloadResult is one workload's pairs and their summary.
type WorkloadResult struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"`
	Blast   string `json:"blast"`
	Peer    string `json:"peer"`
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
	Pairs   []Pair `json:"pairs,omitempty"`
	// Summaries over the pairs that measured something.
	BlastValue Summary                `json:"blast_value"`
	PeerValue  Summary                `json:"peer_value"`
	Ratio      Summary                `json:"ratio"` // per pair blast/peer
	BlastLoss  *Summary               `json:"blast_loss,omitempty"`
	PeerLoss   *Summary               `json:"peer_loss,omitempty"`
	BlastProcs map[string]ProcSummary `json:"blast_procs,omitempty"` // by role
	PeerProcs  map[string]ProcSummary `json:"peer_procs,omitempty"`
	// SenderCPURatio is the per-pair ratio of the senders' CPU-seconds
	// per GB, blast/peer (lower is better for blast).
	SenderCPURatio Summary `json:"sender_cpu_per_gb_ratio"`
}

// Pair is one blast run and the peer run that followed it.
type Pair struct {
	Blast Sample `json:"blast"`
	Peer  Sample `json:"peer"`
	Ratio Num    `json:"ratio"`
}

// ProcSummary summarizes one role's processes over the pairs.
type ProcSummary struct {
	CPUPerGB Summary `json:"cpu_sec_per_gb"`
	MaxRSSKB Summary `json:"max_rss_kb"`
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
	res.Machine = DescribeMachine(ctx, cfg.Dir)
	res.Caps = DetectCaps(ctx, cfg.Blast)
	fmt.Fprintf(log, "bench: %s mode, %d pairs of %d s; %s, kernel %s, %d cores, blast %s\n",
		res.Mode, cfg.Pairs, cfg.Secs, res.Machine.CPUModel, res.Machine.Kernel, res.Machine.Cores, res.Machine.BlastCommit)

	lab, err := netlab.New(netlab.Direct, netlab.Options{})
	if err != nil {
		return nil, err
	}
	defer lab.Close()
	env := &Env{Lab: lab, Blast: cfg.Blast, Secs: cfg.Secs, Caps: res.Caps, counts: map[string]int64{}}
	if err := env.Check(); err != nil {
		return nil, err
	}
	res.Lab = lab.String()

	// Decide what runs, then install the peers that needs.
	var run []Workload
	var tools []string
	for _, w := range Workloads() {
		wr := WorkloadResult{ID: w.ID, Title: w.Title, Metric: w.Metric, Unit: w.Unit, Blast: w.Blast.Label, Peer: w.Peer.Label}
		switch {
		case len(cfg.Only) > 0 && !slices.Contains(cfg.Only, w.ID):
			continue
		case len(cfg.Only) == 0 && cfg.Quick && !w.Quick:
			wr.Skipped = "not in the quick suite (make bench runs it)"
			if w.Unavailable != nil {
				if why := w.Unavailable(env); why != "" {
					wr.Skipped = why
				}
			}
		case w.Unavailable != nil && w.Unavailable(env) != "":
			wr.Skipped = w.Unavailable(env)
		default:
			run = append(run, w)
			if w.Peer.Tool != "" && !slices.Contains(tools, w.Peer.Tool) {
				tools = append(tools, w.Peer.Tool)
			}
		}
		res.Workloads = append(res.Workloads, wr)
	}
	if err := InstallPeers(ctx, tools, log); err != nil {
		return nil, err
	}
	for _, t := range tools {
		res.Machine.Peers[t] = toolVersion(ctx, t)
	}

	for _, w := range run {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		i := slices.IndexFunc(res.Workloads, func(r WorkloadResult) bool { return r.ID == w.ID })
		res.Workloads[i] = runWorkload(ctx, env, w, cfg.Pairs, res.Workloads[i], log)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	lab.Close() // compare builds its own lab
	if cfg.Compare {
		for _, udp := range []bool{false, true} {
			t, err := RunCompare(ctx, cfg.Blast, udp, cfg.Secs)
			if err != nil {
				fmt.Fprintf(log, "bench: blast compare: %v\n", err)
			}
			res.Compare = append(res.Compare, t)
		}
	}
	res.Targets = EvalTargets(res.Workloads)
	res.Elapsed = time.Since(began).Seconds()
	return res, ctx.Err()
}

// runWorkload calibrates, then runs blast and the peer alternately.
func runWorkload(ctx context.Context, env *Env, w Workload, pairs int, wr WorkloadResult, log io.Writer) WorkloadResult {
	fmt.Fprintf(log, "bench: %s: %s\n", w.ID, w.Title)
	if w.Calibrate != nil {
		if err := w.Calibrate(ctx, env); err != nil {
			wr.Error = err.Error()
			fmt.Fprintf(log, "bench: %s: %v\n", w.ID, err)
			return wr
		}
	}
	for i := range pairs {
		if ctx.Err() != nil {
			break
		}
		b := w.Blast.Run(ctx, env)
		if ctx.Err() != nil {
			break
		}
		p := w.Peer.Run(ctx, env)
		pr := Pair{Blast: b, Peer: p, Ratio: Num(Ratio(float64(b.Value), float64(p.Value)))}
		wr.Pairs = append(wr.Pairs, pr)
		fmt.Fprintf(log, "bench: %s pair %d: blast %s, peer %s %s, ratio %s%s\n", w.ID, i+1,
			fmtValue(float64(b.Value)), fmtValue(float64(p.Value)), w.Unit, fmtRatio(float64(pr.Ratio)), sampleErrs(b, p))
	}
	summarize(&wr)
	return wr
}

func sampleErrs(b, p Sample) string {
	s := ""
	if b.Err != "" {
		s += "\n  blast: " + b.Err
	}
	if p.Err != "" {
		s += "\n  peer: " + p.Err
	}
	return s
}

// summarize fills the summaries from the pairs.
func summarize(wr *WorkloadResult) {
	var bv, pv, ratio, bl, pl, cpuRatio []float64
	for _, p := range wr.Pairs {
		bv = append(bv, float64(p.Blast.Value))
		pv = append(pv, float64(p.Peer.Value))
		ratio = append(ratio, float64(p.Ratio))
		bl = append(bl, float64(p.Blast.Loss))
		pl = append(pl, float64(p.Peer.Loss))
		bs, ps := p.Blast.proc("sender"), p.Peer.proc("sender")
		if bs != nil && ps != nil && p.Blast.Err == "" && p.Peer.Err == "" {
			cpuRatio = append(cpuRatio, Ratio(float64(bs.CPUPerGB), float64(ps.CPUPerGB)))
		}
	}
	wr.BlastValue, wr.PeerValue, wr.Ratio = Summarize(bv), Summarize(pv), Summarize(ratio)
	if s := Summarize(bl); s.N > 0 {
		wr.BlastLoss = &s
	}
	if s := Summarize(pl); s.N > 0 {
		wr.PeerLoss = &s
	}
	wr.SenderCPURatio = Summarize(cpuRatio)
	wr.BlastProcs = procSummaries(wr.Pairs, func(p Pair) Sample { return p.Blast })
	wr.PeerProcs = procSummaries(wr.Pairs, func(p Pair) Sample { return p.Peer })
}

func procSummaries(pairs []Pair, side func(Pair) Sample) map[string]ProcSummary {
	out := map[string]ProcSummary{}
	for _, role := range []string{"sender", "receiver"} {
		var cpu, rss []float64
		for _, p := range pairs {
			s := side(p)
			if s.Err != "" {
				continue
			}
			if ps := s.proc(role); ps != nil {
				cpu = append(cpu, float64(ps.CPUPerGB))
				rss = append(rss, float64(ps.MaxRSSKB))
			}
		}
		if len(rss) > 0 {
			out[role] = ProcSummary{CPUPerGB: Summarize(cpu), MaxRSSKB: Summarize(rss)}
		}
	}
	return out
}
