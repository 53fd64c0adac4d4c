package sockets_test

import (
	"testing"

	"github.com/blastnet/blast/engine/enginetest"
	"github.com/blastnet/blast/engine/sockets"
)

func TestReadWriteConformance(t *testing.T) {
	enginetest.Run(t, sockets.ReadWrite{}, enginetest.All)
}
