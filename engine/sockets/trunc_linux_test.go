package sockets_test

import (
	"errors"
	"io"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
)

func TestTruncConformance(t *testing.T) {
	enginetest.Run(t, sockets.Trunc{}, enginetest.Caps{TCPRecv: true, UDPRecv: true, Timeout: true, FramingRecv: true, HeaderPeek: true})
}

func TestTruncRefusesData(t *testing.T) {
	for _, spec := range []*engine.Spec{
		{BufLen: 100, Sink: io.Discard},
		{BufLen: 100, Touch: true},
	} {
		mine, _ := tcpPair(t)
		f := &engine.Flow{Sock: mine, Spec: spec, Stats: &engine.Counters{}}
		err := run(t, sockets.Trunc{}, f, false)
		if !errors.Is(err, sockets.ErrTruncData) {
			t.Errorf("recv with sink %v touch %v: got %v, want ErrTruncData", spec.Sink != nil, spec.Touch, err)
		}
	}
}
