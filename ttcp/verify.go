package ttcp

import (
	"fmt"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/internal/verify"
)

// validateVerify checks --verify against the rest of the command line:
// the blocks replace -s's pattern, so they cannot go with standard input
// or output, -F or -B, and need a backend that sends from memory and
// reads what it receives.
func (c *Config) validateVerify() error {
	if !c.Verify {
		return nil
	}
	switch {
	case c.File != "":
		return usagef("--verify sends generated blocks and -F %s sends a file: choose one", c.File)
	case c.Blocks:
		return usagef("--verify checks the received blocks and discards them, and -B writes them out: drop -B")
	case !c.SinkMode:
		return usagef("--verify sends and checks generated blocks in place of -s's pattern: add -s (standard input and output are not verified)")
	case c.BufLen < verify.HeaderLen:
		return usagef("-l %d: --verify needs blocks of at least %d bytes (their header)", c.BufLen, verify.HeaderLen)
	case c.Transmit && c.Backend == "sendfile":
		return usagef("--verify: sendfile sends from a file, and the blocks are made in memory: use --backend readwrite, splice, zerocopy or iouring")
	case !c.Transmit && c.Backend == "trunc":
		return usagef("--verify: trunc discards what it receives without reading it: receive with --backend readwrite, splice or iouring")
	}
	if b, err := engine.Lookup(c.Backend); err == nil {
		spec := &engine.Spec{Protocol: engine.TCP, BufLen: c.BufLen}
		if c.UDP {
			spec.Protocol = engine.UDP
		}
		if c.Transmit {
			spec.Source = &verify.Source{}
		} else {
			spec.Sink = &verify.Sink{}
		}
		if err := engine.Check(b, spec, c.Transmit); err != nil {
			return usagef("--verify with --backend %s: %v", c.Backend, err)
		}
	}
	return nil
}

// verifier is --verify in a run: the Source of the transmitter or the
// Sink of the receiver.
type verifier struct {
	src  *verify.Source
	sink *verify.Sink
}

// newVerifier puts --verify's Source or Sink in spec: blocks of -l bytes,
// one per datagram on UDP, of flow 0 (ttcp has one).
func newVerifier(c *Config, spec *engine.Spec) (*verifier, error) {
	f := verify.Format{Len: c.BufLen}
	v := &verifier{}
	var err error
	if c.Transmit {
		v.src, err = verify.NewSource(f, c.UDP)
		spec.Source = v.src
	} else {
		v.sink, err = verify.NewSink(f, c.UDP)
		spec.Sink = v.sink
	}
	return v, err
}

// end closes the Sink once the transfer is over and returns the
// transfer's error, or else what the check found wrong. nil-safe.
func (v *verifier) end(xerr error) error {
	if v == nil || v.sink == nil {
		return xerr
	}
	v.sink.Close()
	if xerr != nil {
		return xerr
	}
	return v.sink.Counts().Err()
}

// lines are blast's verify line, which follows the summary: what the
// transmitter sent, or what the receiver found.
func (v *verifier) lines() []string {
	switch {
	case v == nil:
		return nil
	case v.src != nil:
		n := v.src.Sent()
		if n == 0 {
			return []string{"verify: no blocks sent"}
		}
		return []string{fmt.Sprintf("verify: %d blocks of %d bytes sent, numbered 0 to %d", n, v.src.Format().Len, n-1)}
	}
	return []string{"verify: " + v.sink.Counts().String()}
}
