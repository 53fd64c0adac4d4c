package pathmtu

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The search on a simulated path: every size up to pmtu passes (each
// datagram lost with a chance of loss), anything larger is lost. It finds
// pmtu exactly, in a bounded number of rounds.
func TestSearch(t *testing.T) {
	for _, tc := range []struct {
		name            string
		least, top      int
		pmtu            int
		loss            float64
		want            Direction
		maxRounds       int
		wantNotMeasured bool
	}{
		{name: "jumbo end behind 1500", least: 576, top: 9000, pmtu: 1500, want: Direction{Measured: true, PMTU: 1500, Exact: true, Lost: 1501}, maxRounds: 2},
		{name: "the whole MTU passes", least: 576, top: 9000, pmtu: 9000, want: Direction{Measured: true, PMTU: 9000, Exact: true}, maxRounds: 1},
		{name: "a tunnel's 1476", least: 576, top: 9000, pmtu: 1476, want: Direction{Measured: true, PMTU: 1476, Exact: true, Lost: 1477}, maxRounds: 5},
		{name: "loopback", least: 576, top: 65535, pmtu: 65535, want: Direction{Measured: true, PMTU: 65535, Exact: true}, maxRounds: 1},
		{name: "an odd hop on loopback", least: 576, top: 65535, pmtu: 33333, want: Direction{Measured: true, PMTU: 33333, Exact: true, Lost: 33334}, maxRounds: 7},
		{name: "IPv6 at 1280", least: 1280, top: 9000, pmtu: 1280, want: Direction{Measured: true, PMTU: 1280, Exact: true, Lost: 1281}, maxRounds: 2},
		{name: "below the least", least: 576, top: 1500, pmtu: 500, wantNotMeasured: true, maxRounds: maxRounds},
		// Random loss of 10%: each size is one datagram, a lost one
		// is sent again before the search settles on it.
		{name: "jumbo end behind 1500, 10% loss", least: 576, top: 9000, pmtu: 1500, loss: 0.1, want: Direction{Measured: true, PMTU: 1500, Exact: true, Lost: 1501}, maxRounds: maxRounds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			s := newSearch(tc.least, tc.top)
			arrived := map[int]bool{}
			for !s.done() {
				sizes := s.next()
				for _, n := range sizes {
					if n <= tc.pmtu && rng.Float64() >= tc.loss {
						arrived[n] = true
					}
				}
				s.update(sizes, arrived)
			}
			var got Direction
			s.finish(&got)
			if got.Rounds > tc.maxRounds {
				t.Errorf("%d rounds, want at most %d", got.Rounds, tc.maxRounds)
			}
			got.Rounds = 0
			if tc.wantNotMeasured {
				if got.Measured || got.NotMeasured == "" {
					t.Errorf("got %+v, want not measured", got)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A round stays within roundBytes and never sends a size twice.
func TestSearchRounds(t *testing.T) {
	s := newSearch(576, 65535)
	sizes := s.next()
	total := 0
	seen := map[int]bool{}
	for _, n := range sizes {
		total += n
		if seen[n] || n < 576 || n > 65535 {
			t.Errorf("size %d twice or out of range", n)
		}
		seen[n] = true
	}
	if total > roundBytes || len(sizes) == 0 {
		t.Errorf("first round: %d sizes, %d bytes; want some, at most %d", len(sizes), total, roundBytes)
	}
}

func TestGreeting(t *testing.T) {
	g := Greeting(40000)
	if port, ok := ParseGreeting(g); !ok || port != 40000 {
		t.Errorf("ParseGreeting(Greeting(40000)) = %d, %v", port, ok)
	}
	a := answer(40001, 9000, "enp1s0f0np0")
	if port, mtu, name, ok := parseAnswer(a); !ok || port != 40001 || mtu != 9000 || name != "enp1s0f0np0" {
		t.Errorf("parseAnswer = %d, %d, %q, %v", port, mtu, name, ok)
	}
	// An answer is no greeting (its MTU field is not zero), nor is port 0.
	if _, ok := ParseGreeting(a); ok {
		t.Error("an answer parsed as a greeting")
	}
	if _, ok := ParseGreeting(Greeting(0)); ok {
		t.Error("a greeting with port 0 parsed")
	}
	// An iperf3 cookie is no greeting.
	var cookie [GreetingSize]byte
	copy(cookie[:], "abcdefghijklmnopqrstuvwxyz2345672345")
	if _, ok := ParseGreeting(cookie); ok {
		t.Error("a cookie parsed as a greeting")
	}
}

func TestProbeDatagram(t *testing.T) {
	var buf [maxSize]byte
	for _, v6 := range []bool{false, true} {
		b := probe(buf[:], 3, 1500, false, v6)
		if r, size, ok := parseProbe(b, v6); !ok || r != 3 || size != 1500 || len(b) != 1500-overhead(v6) {
			t.Errorf("v6 %v: probe of 1500: %d bytes parsed as round %d size %d ok %v", v6, len(b), r, size, ok)
		}
		var mbuf [probeHeader]byte
		m := probe(mbuf[:], 4, 0, true, v6)
		if r, size, ok := parseProbe(m, v6); !ok || r != 4 || size != 0 {
			t.Errorf("v6 %v: marker parsed as round %d size %d ok %v", v6, r, size, ok)
		}
		// A datagram shorter than the size it claims is refused.
		if _, _, ok := parseProbe(b[:len(b)-1], v6); ok {
			t.Errorf("v6 %v: a truncated probe parsed", v6)
		}
	}
}

func FuzzParseGreeting(f *testing.F) {
	g := Greeting(5201)
	f.Add(g[:])
	a := answer(5202, 1500, "eth0")
	f.Add(a[:])
	f.Add(make([]byte, GreetingSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != GreetingSize {
			return
		}
		if port, ok := ParseGreeting([GreetingSize]byte(b)); ok && Greeting(port) != [GreetingSize]byte(b) {
			t.Errorf("%q parsed as port %d, which is another greeting", b, port)
		}
		parseAnswer([GreetingSize]byte(b))
	})
}

func FuzzParseProbe(f *testing.F) {
	var buf [maxSize]byte
	f.Add(probe(buf[:], 1, 600, false, false), false)
	f.Add(probe(buf[:], 2, 0, true, true), true)
	f.Fuzz(func(t *testing.T, b []byte, v6 bool) {
		if _, size, ok := parseProbe(b, v6); ok && size > 0 && size-overhead(v6) != len(b) {
			t.Errorf("%d bytes parsed as a probe of %d", len(b), size)
		}
	})
}
