// Package verify is blast's --verify: data blocks that carry their flow,
// their sequence number and a checksum, a Source that generates them and
// a Sink that checks them, counting blocks intact, corrupt, missing,
// duplicate and reordered.
//
// # The block
//
// Every block is Format.Len bytes (at least HeaderLen), all of them
// generated:
//
//	offset  size  field
//	0       4     magic "BLV1"
//	4       4     block length (big-endian), Format.Len
//	8       4     flow id (big-endian), Format.Flow: the stream's id
//	12      4     CRC-32C (Castagnoli) of the whole block, this field as 0
//	16      8     sequence number (big-endian), from 0
//	24      ...   payload: a fixed pseudo-random pattern of the block
//	              length XOR a 64-bit key derived from flow and sequence
//
// The checksum catches any flipped byte anywhere in the block (CRC-32C
// detects every error burst of up to 32 bits, and misses others with
// probability 2^-32). The payload depends on the position in the block and
// on the sequence number, so bytes moved within a block or from another
// block are caught too, and a corrupt block can be compared with what it
// should have been to say where the first wrong byte is (Fault). The
// receiver reads the checksum only; it regenerates a block only when the
// checksum fails.
//
// # Streams and datagrams
//
// On a TCP stream (NewSink with datagrams false) the Sink cuts the byte
// stream into blocks of Format.Len whatever the sizes of the writes that
// bring it, and a block's sequence number is its position in the stream:
// a corrupt block is attributed to that position. On UDP each datagram is
// one block (datagrams true): the Sink splits a write into blocks of
// Format.Len, so a GRO train handed over whole is checked datagram by
// datagram, and a corrupt block is attributed to the sequence number it
// carries if the rest of it matches that block closely, else to the next
// one expected, else to none (it then also shows up as missing).
//
// The last block of a byte count that is no multiple of the block length
// goes out short: the Source writes the prefix of the block, and the Sink
// checks that prefix byte for byte (Counts.Short).
//
// # Counting
//
// Blocks counts the intact blocks, each sequence number once; Corrupt the
// blocks whose checksum or header is wrong; Missing the sequence numbers
// skipped over (a gap before a higher one) and not filled in later;
// Duplicate the intact blocks whose number was seen already (within the
// last Window numbers); Reordered the intact blocks that came after a
// higher number (they fill a gap, which stops counting as missing).
// Blocks lost after the last one received are not seen as missing: the
// Sink cannot know how many were sent (compare with the sender's
// Source.Sent). On a stream (TCP) a gap, a duplicate or a reordering is
// a failure as much as a corrupt block; on UDP only corrupt and missing
// blocks are (Counts.Err).
//
// The counters are atomic, so Counts may be read while the flow runs (for
// interval lines); once the flow is over and the Sink closed, they are
// exact.
//
// # Headers of others
//
// In client/server mode a UDP datagram starts with iperf3's header (send
// time and sequence number), which the stream's engine.Framing owns.
// Framing wraps that Framing and puts the block after the first Offset
// bytes (16: room for iperf3's 64-bit header), so the block length there
// is the datagram length less 16, and those first 16 bytes are not
// verified (iperf3's own sequence numbers count loss in them). Fault
// offsets are then counted from the start of the datagram.
package verify

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// HeaderLen is the size of a block's header: a block is at least this
// long.
const HeaderLen = 24

// MaxBlockLen is the largest block a sender makes: blast's largest -l
// (64 MiB).
const MaxBlockLen = 64 << 20

// Magic opens every block: "BLV1".
const Magic = 0x424c5631

// Window is how many sequence numbers below the highest seen the Sink
// remembers, to tell a duplicate from a block that arrived late.
const Window = 1 << 16

// MaxFaults is how many corrupt blocks Counts describes one by one.
const MaxFaults = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Format is the agreed shape of one flow's blocks: both ends must use the
// same.
type Format struct {
	// Len is the block length in bytes, at least HeaderLen.
	Len int
	// Flow identifies the flow (the stream's id in client/server mode, 0
	// in ttcp mode): a block of another flow is corrupt.
	Flow uint32
}

// Validate says what is wrong with f, if anything.
func (f Format) Validate() error {
	if f.Len < HeaderLen {
		return fmt.Errorf("verify: blocks of %d bytes: a block needs at least %d (its header)", f.Len, HeaderLen)
	}
	if int64(f.Len) > 1<<31 {
		return fmt.Errorf("verify: blocks of %d bytes: at most 2 GiB", f.Len)
	}
	return nil
}

// gen makes and checks the blocks of one Format.
type gen struct {
	Format
	// base is the payload's pattern before the key: len Len-HeaderLen.
	base []byte
	// flowKey mixes the flow and length into every block's key.
	flowKey uint64
}

func newGen(f Format) (*gen, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	g := &gen{Format: f, base: make([]byte, f.Len-HeaderLen), flowKey: mix(uint64(f.Flow)<<32 | uint64(f.Len))}
	x := uint64(0x626c617374) // "blast"
	b := g.base
	for len(b) >= 8 {
		x += 0x9e3779b97f4a7c15
		binary.LittleEndian.PutUint64(b, mix(x))
		b = b[8:]
	}
	x += 0x9e3779b97f4a7c15
	for i, k := 0, mix(x); i < len(b); i++ {
		b[i] = byte(k >> (8 * i))
	}
	return g, nil
}

// mix is splitmix64's finalizer.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// key is the payload key of block seq.
func (g *gen) key(seq uint64) uint64 { return mix(seq+0x9e3779b97f4a7c15) ^ g.flowKey }

// fill writes block seq into b, which is g.Len bytes.
func (g *gen) fill(b []byte, seq uint64) {
	b = b[:g.Len]
	binary.BigEndian.PutUint32(b[0:], Magic)
	binary.BigEndian.PutUint32(b[4:], uint32(g.Len))
	binary.BigEndian.PutUint32(b[8:], g.Flow)
	binary.BigEndian.PutUint32(b[12:], 0)
	binary.BigEndian.PutUint64(b[16:], seq)
	xorKey(b[HeaderLen:], g.base, g.key(seq))
	binary.BigEndian.PutUint32(b[12:], crc32.Update(0, castagnoli, b))
}

// xorKey writes base XOR the repeated little-endian key into dst, which
// is as long as base.
func xorKey(dst, base []byte, k uint64) {
	dst = dst[:len(base)]
	i := 0
	for ; i+32 <= len(dst); i += 32 {
		d, s := dst[i:i+32:i+32], base[i:i+32:i+32]
		binary.LittleEndian.PutUint64(d[0:], binary.LittleEndian.Uint64(s[0:])^k)
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(s[8:])^k)
		binary.LittleEndian.PutUint64(d[16:], binary.LittleEndian.Uint64(s[16:])^k)
		binary.LittleEndian.PutUint64(d[24:], binary.LittleEndian.Uint64(s[24:])^k)
	}
	for ; i+8 <= len(dst); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(base[i:])^k)
	}
	for j := 0; i < len(dst); i, j = i+1, j+1 {
		dst[i] = base[i] ^ byte(k>>(8*j))
	}
}

var zero4 [4]byte

// intact reports whether b, a whole block, has blast's header for this
// format and a checksum that matches.
func (g *gen) intact(b []byte) bool {
	if len(b) != g.Len || binary.BigEndian.Uint32(b[0:]) != Magic || binary.BigEndian.Uint32(b[4:]) != uint32(g.Len) {
		return false
	}
	c := crc32.Update(0, castagnoli, b[:12])
	c = crc32.Update(c, castagnoli, zero4[:])
	c = crc32.Update(c, castagnoli, b[16:])
	return c == binary.BigEndian.Uint32(b[12:])
}

// Fault is one corrupt block: its sequence number (-1 when it could not
// be told) and the offset of its first wrong byte in the block (in the
// datagram, with Framing).
type Fault struct {
	Block  int64 `json:"block"`
	Offset int   `json:"offset"`
}

func (f Fault) String() string {
	if f.Block < 0 {
		return fmt.Sprintf("a block at byte %d", f.Offset)
	}
	return fmt.Sprintf("block %d at byte %d", f.Block, f.Offset)
}

// Counts are what a Sink found. See the package doc for what each counts.
type Counts struct {
	// Blocks are the intact blocks, each sequence number once (Short
	// ones included).
	Blocks    int64 `json:"blocks"`
	Corrupt   int64 `json:"corrupt"`
	Missing   int64 `json:"missing"`
	Duplicate int64 `json:"duplicate"`
	Reordered int64 `json:"reordered"`
	// Short are intact blocks that arrived cut short: the last of a byte
	// count, or a stream that ended mid-block.
	Short int64 `json:"short,omitempty"`
	// BlockLen is the block length the Sink expects.
	BlockLen int `json:"block_len"`
	// Stream is set on a TCP stream: a gap, duplicate or reordering is an
	// error there.
	Stream bool `json:"stream,omitempty"`
	// Faults are the first MaxFaults corrupt blocks.
	Faults []Fault `json:"faults,omitempty"`
	// Unframed are the corrupt blocks that carried no verify header at
	// all (a sender without --verify, or a misaligned stream).
	Unframed int64 `json:"unframed,omitempty"`
	// PeerBlockLen is the block length a block's header gave when it was
	// not BlockLen (the two ends disagree about -l).
	PeerBlockLen int `json:"peer_block_len,omitempty"`
}

// String is the one-line summary: "1234 blocks ok, 1 corrupt (block 12 at
// byte 17), 0 missing, 0 duplicate, 0 reordered".
func (c Counts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d blocks ok, %d corrupt", c.Blocks, c.Corrupt)
	if len(c.Faults) > 0 {
		b.WriteString(" (")
		b.WriteString(c.faultList(3))
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", %d missing, %d duplicate, %d reordered", c.Missing, c.Duplicate, c.Reordered)
	if c.Short > 0 {
		fmt.Fprintf(&b, ", %d short", c.Short)
	}
	return b.String()
}

func (c Counts) faultList(n int) string {
	var parts []string
	for i, f := range c.Faults {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, f.String())
	}
	return strings.Join(parts, ", ")
}

// Failed reports whether the counts show data that did not arrive as
// sent.
func (c Counts) Failed() bool {
	return c.Corrupt > 0 || c.Missing > 0 || (c.Stream && (c.Duplicate > 0 || c.Reordered > 0))
}

// Err is nil for a clean run, else one line naming what went wrong and,
// where the counts tell, why.
func (c Counts) Err() error {
	if !c.Failed() {
		return nil
	}
	var what []string
	if c.Corrupt > 0 {
		s := fmt.Sprintf("%d corrupt", c.Corrupt)
		if len(c.Faults) > 0 && c.PeerBlockLen == 0 && !(c.Blocks == 0 && c.Unframed == c.Corrupt) {
			s += " (" + c.faultList(3) + ")"
		}
		what = append(what, s)
	}
	if c.Missing > 0 {
		what = append(what, fmt.Sprintf("%d missing", c.Missing))
	}
	if c.Stream && c.Duplicate > 0 {
		what = append(what, fmt.Sprintf("%d duplicate", c.Duplicate))
	}
	if c.Stream && c.Reordered > 0 {
		what = append(what, fmt.Sprintf("%d reordered", c.Reordered))
	}
	msg := fmt.Sprintf("verify: %s received: %s", plural(c.Blocks+c.Corrupt+c.Duplicate, "block"), strings.Join(what, ", "))
	switch {
	case c.PeerBlockLen > 0:
		msg += fmt.Sprintf(": the sender's blocks are %d bytes and this end expects %d: give both ends the same block length (-l)", c.PeerBlockLen, c.BlockLen)
	case c.Blocks == 0 && c.Unframed == c.Corrupt:
		msg += ": no block carried a --verify header: does the sender run with --verify?"
	}
	return errors.New(msg)
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
