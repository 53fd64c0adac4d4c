package sockets_test

import (
	"testing"

	"github.com/blastnet/blast/engine"
	"github.com/blastnet/blast/engine/enginetest"
	_ "github.com/blastnet/blast/engine/sockets"
)

func TestReadWriteConformance(t *testing.T) {
	b, err := engine.Lookup("readwrite")
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Run(t, b, enginetest.All)
}
