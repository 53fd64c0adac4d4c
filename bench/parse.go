package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// TTCPResult is what bench reads from one side's ttcp-mode output.
type TTCPResult struct {
	Bytes     int64   // "N bytes in S real seconds"
	Seconds   float64 // S
	Datagrams int64   // UDP: "N datagrams sent" or "N datagrams received"
	Backend   string  // from "... (backend NAME)"
}

var (
	ttcpBytesRe   = regexp.MustCompile(`^\S+: (\d+) bytes in ([0-9.]+) real seconds`)
	ttcpDgramRe   = regexp.MustCompile(`^\S+: (\d+) datagrams (?:sent|received)`)
	ttcpBackendRe = regexp.MustCompile(`^\S+: .*\(backend ([^)]+)\)\s*$`)
)

// ParseTTCP reads the report lines of blast's (or any ttcp's) classic mode.
// The byte count line is required; the others are read when present.
func ParseTTCP(out string) (TTCPResult, error) {
	var r TTCPResult
	found := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := ttcpBytesRe.FindStringSubmatch(line); m != nil {
			b, err1 := strconv.ParseInt(m[1], 10, 64)
			s, err2 := strconv.ParseFloat(m[2], 64)
			if err := errors.Join(err1, err2); err != nil {
				return r, fmt.Errorf("ttcp line %q: %w", line, err)
			}
			r.Bytes, r.Seconds, found = b, s, true
		}
		if m := ttcpDgramRe.FindStringSubmatch(line); m != nil {
			r.Datagrams, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if m := ttcpBackendRe.FindStringSubmatch(line); m != nil {
			r.Backend = m[1]
		}
	}
	if !found {
		return r, fmt.Errorf("no %q line in the ttcp output: %s", "N bytes in S real seconds", firstLines(out, 3))
	}
	return r, nil
}

// Iperf3Result is what bench reads from an iperf3 -J document (iperf3's
// own, or blast client's, which follows the same schema).
type Iperf3Result struct {
	SentBytes     int64
	SentSeconds   float64
	RecvBytes     int64
	RecvSeconds   float64
	Streams       int
	Retransmits   int64
	UDP           bool
	Packets       int64 // UDP: datagrams sent
	LostPackets   int64 // UDP: datagrams the receiver missed
	BlockSize     int   // -l: bytes per write (UDP: per datagram)
	GSO, GRO      bool  // UDP: --gsro in effect (iperf3 3.21 and later)
	Version       string
	Backend       string
	RemoteBackend string
	// StreamBytes is what each stream's receiver got (TCP), in the
	// document's order.
	StreamBytes []int64
}

// Spread is how far the stream furthest from the streams' mean received
// was from it, as a fraction of the mean (0.2: a stream 20% off); nil
// with fewer than two streams or nothing received.
func (r Iperf3Result) Spread() *float64 {
	if len(r.StreamBytes) < 2 {
		return nil
	}
	var sum float64
	for _, b := range r.StreamBytes {
		sum += float64(b)
	}
	mean := sum / float64(len(r.StreamBytes))
	if mean <= 0 {
		return nil
	}
	var worst float64
	for _, b := range r.StreamBytes {
		worst = max(worst, math.Abs(float64(b)-mean)/mean)
	}
	return &worst
}

// SentBitsPerSecond is the sender's average rate.
func (r Iperf3Result) SentBitsPerSecond() float64 {
	return Ratio(float64(r.SentBytes)*8, r.SentSeconds)
}

// RecvBitsPerSecond is the receiver's average rate.
func (r Iperf3Result) RecvBitsPerSecond() float64 {
	return Ratio(float64(r.RecvBytes)*8, r.RecvSeconds)
}

// Delivered is the number of datagrams the receiving application got.
func (r Iperf3Result) Delivered() int64 { return r.Packets - r.LostPackets }

type iperfSum struct {
	Seconds     float64 `json:"seconds"`
	Bytes       int64   `json:"bytes"`
	Retransmits int64   `json:"retransmits"`
	Packets     int64   `json:"packets"`
	LostPackets int64   `json:"lost_packets"`
}

type iperfDoc struct {
	Start struct {
		Version   string `json:"version"`
		TestStart struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
			BlkSize    int    `json:"blksize"`
			GSO        int    `json:"gso"`
			GRO        int    `json:"gro"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		Streams []struct {
			Receiver *iperfSum `json:"receiver"`
		} `json:"streams"`
		Sum         *iperfSum `json:"sum"`
		SumSent     *iperfSum `json:"sum_sent"`
		SumReceived *iperfSum `json:"sum_received"`
		Blast       struct {
			Backend       string `json:"backend"`
			RemoteBackend string `json:"remote_backend"`
		} `json:"blast"`
	} `json:"end"`
	Error string `json:"error"`
}

// ParseIperf3 reads an iperf3 -J document. A document with an "error"
// key is an error, with iperf3's words.
func ParseIperf3(data []byte) (Iperf3Result, error) {
	var d iperfDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return Iperf3Result{}, fmt.Errorf("iperf3 JSON: %w (output begins: %s)", err, firstLines(string(data), 2))
	}
	if d.Error != "" {
		return Iperf3Result{}, fmt.Errorf("iperf3 reports: %s", d.Error)
	}
	e, ts := d.End, d.Start.TestStart
	r := Iperf3Result{
		Streams:       ts.NumStreams,
		UDP:           strings.EqualFold(ts.Protocol, "UDP"),
		BlockSize:     ts.BlkSize,
		GSO:           ts.GSO != 0,
		GRO:           ts.GRO != 0,
		Version:       d.Start.Version,
		Backend:       e.Blast.Backend,
		RemoteBackend: e.Blast.RemoteBackend,
	}
	sent, recv := e.SumSent, e.SumReceived
	if sent == nil {
		sent = e.Sum
	}
	if recv == nil {
		recv = e.Sum
	}
	if sent == nil || recv == nil {
		return r, errors.New("iperf3 JSON: no end.sum_sent/sum_received (did the test run?)")
	}
	r.SentBytes, r.SentSeconds, r.Retransmits = sent.Bytes, sent.Seconds, sent.Retransmits
	r.RecvBytes, r.RecvSeconds = recv.Bytes, recv.Seconds
	for _, st := range e.Streams {
		if st.Receiver != nil {
			r.StreamBytes = append(r.StreamBytes, st.Receiver.Bytes)
		}
	}
	if r.UDP {
		// The receiver's sum holds the datagram count the sender announced
		// and the receiver's loss; older iperf3s have only end.sum.
		r.Packets, r.LostPackets = recv.Packets, recv.LostPackets
		if e.Sum != nil && r.Packets == 0 {
			r.Packets, r.LostPackets = e.Sum.Packets, e.Sum.LostPackets
		}
		if r.Packets < 0 || r.LostPackets < 0 || r.LostPackets > r.Packets {
			return r, fmt.Errorf("iperf3 JSON: %d datagrams lost of %d sent: not a count", r.LostPackets, r.Packets)
		}
		if r.RecvBytes == 0 {
			return r, errors.New(noDatagrams(r))
		}
	}
	return r, nil
}

// noDatagrams explains a UDP run whose receiver got nothing.
func noDatagrams(r Iperf3Result) string {
	msg := fmt.Sprintf("iperf3 JSON: the receiver got no datagrams (%d counted as sent, %d bytes sent)", r.Packets, r.SentBytes)
	if r.GSO && r.SentBytes == 0 && r.BlockSize > 0 && r.BlockSize < 512 {
		// 3.21 fills a 65507-byte GSO buffer: 65507/64 = 1023 segments,
		// and Linux takes at most 128 per send (UDP_MAX_SEGMENTS).
		msg += fmt.Sprintf("; with --gsro, %s puts %d datagrams of %d bytes in each send, over the kernel's limit of 128 (UDP_MAX_SEGMENTS), so every send fails: iperf3 after 3.21 caps it (esnet/iperf PR #2033)",
			orDash(r.Version), 65507/r.BlockSize, r.BlockSize)
	}
	return msg
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
