package latency

import (
	"bytes"
	"testing"
)

// FuzzHeader: the header of a UDP request (magic, kind, padding,
// sequence), as the server and the client read whatever arrives on their
// port. Any bytes are read or refused without a panic; a header read
// written again with putHeader reads the same and differs from the
// datagram only in the padding; what putHeader writes reads back.
func FuzzHeader(f *testing.F) {
	req := make([]byte, UDPHeader)
	putHeader(req, kindRequest, 1)
	bye := make([]byte, UDPHeader+8)
	putHeader(bye, kindBye, 1<<64-1)
	f.Add(req, uint8(kindRequest), uint64(1))
	f.Add(bye, uint8(kindBye), uint64(42))
	f.Add([]byte("bLat"), uint8(0), uint64(0))
	f.Add([]byte("bLat\x01\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x07"), uint8(9), uint64(1<<63))
	f.Add([]byte{}, uint8(1), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, kind uint8, seq uint64) {
		k, s, ok := header(b)
		switch {
		case len(b) < UDPHeader || !bytes.Equal(b[:4], magic[:]):
			if ok {
				t.Fatalf("%x read as a header (kind %d, seq %d)", b, k, s)
			}
		case !ok:
			t.Fatalf("%x: a header refused", b)
		default:
			again := make([]byte, UDPHeader)
			putHeader(again, k, s)
			if k2, s2, ok := header(again); !ok || k2 != k || s2 != s {
				t.Fatalf("kind %d seq %d written as %x, read back as %d %d %v", k, s, again, k2, s2, ok)
			}
			if !bytes.Equal(again[:5], b[:5]) || !bytes.Equal(again[8:], b[8:UDPHeader]) {
				t.Fatalf("header %x written again as %x", b[:UDPHeader], again)
			}
		}
		// What a client writes: the header over the start of its request,
		// the rest of which is whatever it sends.
		p := append([]byte(nil), b...)
		if len(p) < UDPHeader {
			p = append(p, make([]byte, UDPHeader-len(p))...)
		}
		putHeader(p, kind, seq)
		if k2, s2, ok := header(p); !ok || k2 != kind || s2 != seq {
			t.Fatalf("kind %d seq %d written as %x, read back as %d %d %v", kind, seq, p, k2, s2, ok)
		}
		if !bytes.Equal(p[UDPHeader:], b[min(len(b), UDPHeader):]) {
			t.Fatalf("putHeader wrote past the header")
		}
	})
}
