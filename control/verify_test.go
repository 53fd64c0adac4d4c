package control

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/blastnet/blast/control/render"
	"github.com/blastnet/blast/control/result"
	"github.com/blastnet/blast/control/wire"
	"github.com/blastnet/blast/internal/verify"
)

// --verify between a blast client and a blast server on 127.0.0.1: every
// block of every stream arrives and is counted, by whichever side
// receives it, and both sides report the count.
func TestVerifyClientServer(t *testing.T) {
	_, port, rl := blastServer(t, ServerConfig{NoNIC: true})
	n := 0
	tcp := func(blocks int64, l int) *verify.Counts {
		return &verify.Counts{Blocks: blocks, BlockLen: l, Stream: true}
	}
	udp := func(blocks int64, l int) *verify.Counts {
		return &verify.Counts{Blocks: blocks, BlockLen: l - udpHeaderRoom}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []*verify.Counts // per stream, in id order
	}{
		{"tcp", Config{Bytes: 10 << 20, BlockLen: 128 << 10}, []*verify.Counts{tcp(80, 128<<10)}},
		{"tcp short last block", Config{Bytes: 1_000_000, BlockLen: 65536}, []*verify.Counts{{Blocks: 16, Short: 1, BlockLen: 65536, Stream: true}}},
		{"tcp reverse P2", Config{Bytes: 10 << 20, BlockLen: 128 << 10, Reverse: true, Parallel: 2}, []*verify.Counts{tcp(40, 128<<10), tcp(40, 128<<10)}},
		{"tcp bidir", Config{Bytes: 4 << 20, BlockLen: 4096, Bidir: true}, []*verify.Counts{tcp(1024, 4096), tcp(1024, 4096)}},
		{"tcp splice", Config{Bytes: 4 << 20, BlockLen: 1000, Backend: "splice", Bidir: true}, []*verify.Counts{
			{Blocks: 4195, Short: 1, BlockLen: 1000, Stream: true}, {Blocks: 4195, Short: 1, BlockLen: 1000, Stream: true}}},
		{"udp", Config{UDP: true, Bytes: 1400 * 1000, BlockLen: 1400, Rate: 100e6, RateSet: true}, []*verify.Counts{udp(1000, 1400)}},
		{"udp reverse readwrite", Config{UDP: true, Bytes: 1000 * 500, BlockLen: 1000, Rate: 100e6, RateSet: true, Reverse: true, Backend: "readwrite"},
			[]*verify.Counts{udp(500, 1000)}},
		{"udp 64-bit bidir", Config{UDP: true, UDP64: true, Bytes: 1200 * 400, BlockLen: 1200, Rate: 100e6, RateSet: true, Bidir: true},
			[]*verify.Counts{udp(400, 1200), udp(400, 1200)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Port, cfg.Verify, cfg.NoNIC = port, true, true
			r := runClient(t, cfg)
			n++
			s := rl.wait(t, n)[n-1]
			if len(r.Streams) != len(tc.want) || len(s.Streams) != len(tc.want) {
				t.Fatalf("%d client streams, %d server streams, want %d", len(r.Streams), len(s.Streams), len(tc.want))
			}
			for i, want := range tc.want {
				c, sv := r.Streams[i], s.Streams[i]
				got, peer := c.Verify, sv.PeerVerify
				if c.Sender {
					got, peer = c.PeerVerify, sv.Verify
				}
				if w := *want; cfg.UDP && !c.Sender && got != nil && got.Blocks >= want.Blocks {
					// A UDP server sends until the client ends the
					// test, and the client ends it once it has the
					// count: its receiver may read a few blocks more.
					w.Blocks = got.Blocks
					want = &w
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("stream %d (client sends: %v): counts (-want +got):\n%s", c.ID, c.Sender, diff)
				}
				if !cmp.Equal(got, peer) {
					t.Errorf("stream %d: the client has %+v, the server %+v", c.ID, got, peer)
				}
			}
			var text bytes.Buffer
			render.Text{}.WriteSummary(&text, r)
			if want := "blocks ok, 0 corrupt, 0 missing, 0 duplicate, 0 reordered"; strings.Count(text.String(), want) != len(tc.want) || !strings.Contains(text.String(), "Verify: [") {
				t.Errorf("summary lacks the verify lines:\n%s", text.String())
			}
		})
	}
}

// The -J document carries each stream's counts under end.blast.
func TestVerifyJSON(t *testing.T) {
	_, port, _ := blastServer(t, ServerConfig{NoNIC: true})
	r := runClient(t, Config{Port: port, Bytes: 1 << 20, BlockLen: 1 << 16, Verify: true, NoNIC: true})
	var b bytes.Buffer
	if err := render.EncodeJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		End struct {
			Blast struct {
				Streams []struct {
					Verify     *verify.Counts `json:"verify"`
					PeerVerify *verify.Counts `json:"peer_verify"`
				} `json:"streams"`
			} `json:"blast"`
		} `json:"end"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := &verify.Counts{Blocks: 16, BlockLen: 1 << 16, Stream: true}
	if s := doc.End.Blast.Streams; len(s) != 1 || s[0].Verify != nil || !cmp.Equal(s[0].PeerVerify, want) {
		t.Errorf("end.blast.streams: %s", b.String())
	}
}

// A failed check is the test's error: one line naming the stream, where
// it was checked and what was wrong.
func TestVerifyResultErr(t *testing.T) {
	res := func(sender bool, c *verify.Counts) *result.Result {
		r := &result.Result{Role: "client", Params: wire.Params{Blast: &wire.BlastParams{Verify: true}}, RemoteVersion: result.Version,
			Streams: []*result.StreamResult{{ID: 1, Sender: sender, PeerBytes: 1, PeerSeconds: 1}}}
		if sender {
			r.Streams[0].PeerVerify = c
		} else {
			r.Streams[0].Verify = c
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *result.Result
		want string
	}{
		{"clean", res(true, &verify.Counts{Blocks: 80, Stream: true}), ""},
		{"corrupt at the server", res(true, &verify.Counts{Blocks: 79, Corrupt: 1, Stream: true, Faults: []verify.Fault{{Block: 12, Offset: 17}}}),
			"stream 1, checked at the server: verify: 80 blocks received: 1 corrupt (block 12 at byte 17)"},
		{"missing here", res(false, &verify.Counts{Blocks: 98, Missing: 2}), "stream 1, checked here: verify: 98 blocks received: 2 missing"},
		{"udp reordering is no failure", res(false, &verify.Counts{Blocks: 98, Reordered: 3, Duplicate: 1}), ""},
		{"not checked", res(true, nil), "stream 1: not verified at the server (see its notes)"},
		{"not blast", func() *result.Result { r := res(true, nil); r.RemoteVersion = ""; return r }(),
			"--verify needs blast at both ends: the server is not blast (iperf3?)"},
		{"not asked", func() *result.Result { r := res(true, nil); r.Params.Blast.Verify = false; return r }(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.VerifyErr()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("verifyErr = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVerifyConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{File: "x"}, "--verify sends generated blocks and -F x a file: choose one"},
		{Config{RepeatingPayload: true}, "--verify and --repeating-payload both choose what the data is"},
		{Config{SkipRxCopy: true, Reverse: true}, "--skip-rx-copy (trunc) discards them unread"},
		{Config{ZeroCopy: true}, "--verify with -Z: sendfile sends from a file"},
		{Config{BlockLen: 20}, "-l 20: --verify needs blocks of at least 24 bytes"},
		{Config{UDP: true, BlockLen: 39}, "-l 39: --verify needs UDP datagrams of at least 40 bytes"},
	} {
		cfg := tc.cfg
		cfg.Host, cfg.Verify = "h", true
		cfg.Defaults()
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	p := (&Config{Verify: true}).params()
	if p.Blast == nil || !p.Blast.Verify {
		t.Errorf("the parameters do not ask for --verify: %+v", p.Blast)
	}
}

// An iperf3 server cannot verify: the test says so and fails.
func TestVerifyIperf3Server(t *testing.T) {
	needIperf3(t)
	for _, reverse := range []bool{false, true} {
		port, wait := iperf3Server(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r, err := Run(ctx, Config{Host: "127.0.0.1", Port: port, Bytes: 1 << 20, Reverse: reverse, Verify: true, NoNIC: true})
		cancel()
		wait()
		if err == nil || !strings.Contains(err.Error(), "--verify needs blast at both ends: the server is not blast (iperf3?)") {
			t.Errorf("reverse %v: error %v", reverse, err)
		}
		if r == nil || len(r.Streams) != 1 || r.Err == nil {
			t.Errorf("reverse %v: no partial result with the error: %+v", reverse, r)
		}
	}
}
