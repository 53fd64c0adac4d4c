package control

import (
	"errors"
	"fmt"

	"github.com/blastnet/blast/internal/verify"
)

// --verify in client/server mode (internal/verify). The client asks with
// BlastParams.Verify; both ends then send numbered, checksummed blocks on
// their sending streams and check them on their receiving ones, and each
// reports what its receivers found in its results (BlastStream.Verify).
// A TCP stream carries blocks of -l bytes end to end; a UDP datagram
// carries iperf3's header in its first 16 bytes (udpHeaderRoom) and one
// block in the rest, so iperf3's sequence numbers still count loss and
// the block covers everything after them. The flow id of a stream's
// blocks is the stream's id.
//
// An iperf3 peer neither checks nor sends blocks: a client that asked
// finds out from the results (they have no "blast" key), and its test
// fails with that reason (exit 1), after the measurement is reported.

// udpHeaderRoom is the part of a UDP datagram before the block: iperf3's
// header, with room for its 64-bit sequence number.
const udpHeaderRoom = 16

// minVerifyUDPBlock is the smallest UDP datagram --verify can use.
const minVerifyUDPBlock = udpHeaderRoom + verify.HeaderLen

// validateVerify checks --verify against the client's other options.
func (c *Config) validateVerify() error {
	if !c.Verify {
		return nil
	}
	switch {
	case c.File != "":
		return fmt.Errorf("--verify sends generated blocks and -F %s a file: choose one", c.File)
	case c.RepeatingPayload:
		return errors.New("--verify and --repeating-payload both choose what the data is: choose one")
	case c.SkipRxCopy || c.RxBackend == "trunc":
		return errors.New("--verify reads every byte received to check it, and --skip-rx-copy (trunc) discards them unread: drop one")
	case c.receives() && c.RxBackend == "" && c.Backend == "trunc":
		return errors.New("--verify reads every byte received to check it, and trunc discards them unread: receive with another backend")
	case c.sends() && !c.UDP && (c.ZeroCopy || c.Backend == "sendfile"):
		return errors.New("--verify with -Z: sendfile sends from a file, and the blocks are made in memory: drop -Z, or use --backend splice")
	case !c.UDP && c.BlockLen != 0 && c.BlockLen < verify.HeaderLen:
		return fmt.Errorf("-l %d: --verify needs blocks of at least %d bytes (their header)", c.BlockLen, verify.HeaderLen)
	case c.UDP && c.BlockLen != 0 && c.BlockLen < minVerifyUDPBlock:
		return fmt.Errorf("-l %d: --verify needs UDP datagrams of at least %d bytes (iperf3's header, then the block's)", c.BlockLen, minVerifyUDPBlock)
	}
	return nil
}

// verifying reports whether the test's streams carry --verify blocks.
func (s *session) verifying() bool {
	b := s.res.Params.Blast
	return b != nil && b.Verify
}

// verifySpec gives a stream whose Spec setSpec just made --verify's
// Source, Sink or Framing, when the test verifies.
func (s *session) verifySpec(st *stream) {
	if !s.verifying() {
		return
	}
	f := verify.Format{Len: st.spec.BufLen, Flow: uint32(st.id)}
	if s.udp {
		if !st.sender && s.receivesTrunc() {
			s.noteOnce("--verify: this side receives with trunc, which discards the data unread: its streams were not verified")
			return
		}
		f.Len -= udpHeaderRoom
		fr, err := verify.NewFraming(st.udp, udpHeaderRoom, f)
		if err != nil {
			s.noteOnce(fmt.Sprintf("--verify: datagrams of %d bytes cannot carry iperf3's header and a block (at least %d bytes): not verified", st.spec.BufLen, minVerifyUDPBlock))
			return
		}
		st.spec.Framing = fr
		if !st.sender {
			st.check = fr.Sink()
		}
		return
	}
	var err error
	if st.sender {
		var src *verify.Source
		src, err = verify.NewSource(f, false)
		st.spec.Source = src
	} else {
		st.check, err = verify.NewSink(f, false)
		st.spec.Sink = st.check
	}
	if err != nil {
		st.spec.Source, st.spec.Sink, st.check = st.source, st.sink, nil
		s.noteOnce(fmt.Sprintf("--verify: blocks of %d bytes are too short for the block header (%d bytes): not verified", st.spec.BufLen, verify.HeaderLen))
	}
}

// receivesTrunc reports whether this side's receiving backend is trunc.
func (s *session) receivesTrunc() bool {
	b := s.rxBackend
	if b == nil {
		b = s.backend
	}
	return b != nil && b.Name() == "trunc"
}

func (s *session) noteOnce(n string) {
	for _, have := range s.res.Notes {
		if have == n {
			return
		}
	}
	s.res.Notes = append(s.res.Notes, n)
}

// verifyCounts are what a receiving stream's check found, exactly: call
// it once the stream is over.
func (st *stream) verifyCounts() *verify.Counts {
	if st.check == nil {
		return nil
	}
	st.check.Close()
	c := st.check.Counts()
	return &c
}
