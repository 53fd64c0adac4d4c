package sockets_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
)

func TestTruncConformance(t *testing.T) {
	enginetest.Run(t, backend(t, "trunc", engine.Options{}), enginetest.Caps{TCPRecv: true, UDPRecv: true})
}

func TestTruncRefusesData(t *testing.T) {
	for _, spec := range []*engine.Spec{
		{BufLen: 100, Sink: io.Discard},
		{BufLen: 100, Touch: true},
	} {
		mine, _ := loopbackTCP(t)
		f := &engine.Flow{Conn: mine, Spec: spec, Stats: &engine.Counters{}}
		err := backend(t, "trunc", engine.Options{}).Recv(context.Background(), f)
		if !errors.Is(err, sockets.ErrTruncData) {
			t.Errorf("recv with sink %v touch %v: got %v, want ErrTruncData", spec.Sink != nil, spec.Touch, err)
		}
	}
}
