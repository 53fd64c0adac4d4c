package nicinfo

import (
	"fmt"
	"strings"

	"github.com/blastnet/blast/finding"
)

// A half-duplex end that collides is on a busy shared segment (a hub) or
// in a duplex mismatch, and its counters tell which: in a mismatch the
// full-duplex far end sends without listening, so the half side's frames
// collide after their first 64 bytes (late collisions, counted on the
// half side) and the full side receives the frames the half side cut off
// (CRC errors and runts, counted on the full side). On a hub every
// station listens before it sends: collisions, even excessive ones, come
// in the first 64 bytes, and nothing arrives corrupted.

// hubMinCollisions: a half-duplex end must have counted this many
// collisions before the absence of late ones says anything (a mismatch
// under load makes late collisions in every hundred or so).
const hubMinCollisions = 100

// hubSummary starts the summary of a half-duplex end that its counters
// put on a hub, so that D7 does not count it as a duplex mismatch's.
const hubSummary = "a busy shared segment (hub)"

// collisionVerdict is what an end's collision counters say.
type collisionVerdict int

const (
	// verdictUnknown: too few collisions, or a counter the driver does
	// not keep: a hub and a mismatch look the same.
	verdictUnknown collisionVerdict = iota
	// verdictHub: many collisions, none late, no CRC error.
	verdictHub
	// verdictMismatch: late collisions on this (half-duplex) end.
	verdictMismatch
)

// collisions tells a hub from a duplex mismatch by this end's counters,
// with the words of the evidence.
func (in Input) collisions() (collisionVerdict, string) {
	late, okL := in.key(LateCollisions)
	if okL && late > 0 {
		ev := fmt.Sprintf("Δ%s = %d", LateCollisions, late)
		if src := keySource(in.Iface, LateCollisions); src != "" {
			ev += " [" + src + "]"
		}
		return verdictMismatch, ev + ": the far end sends without listening (full duplex), a duplex mismatch, not a hub"
	}
	c, okC := in.key(Collisions)
	crc, okF := in.key(FCSErrors)
	switch {
	case !okL:
		return verdictUnknown, "late collisions not counted by this driver: they would tell a duplex mismatch (late collisions here, CRC errors on the far end) from a hub (none)"
	case !okC || c < hubMinCollisions:
		return verdictUnknown, ""
	case !okF:
		return verdictUnknown, fmt.Sprintf("Δ%s = 0 in %d collisions, CRC errors not counted", LateCollisions, c)
	case crc > 0:
		return verdictUnknown, fmt.Sprintf("Δ%s = 0 in %d collisions, but Δ%s = %d: a bad cable, or the far end of a mismatch (its late collisions are counted there)", LateCollisions, c, FCSErrors, crc)
	}
	src := ""
	if s := keySource(in.Iface, LateCollisions); s != "" {
		src = " [" + s + "]"
	}
	return verdictHub, fmt.Sprintf("Δ%s = 0%s and Δ%s = 0 in %d collisions: every station listens before it sends, so a shared segment, not a duplex mismatch", LateCollisions, src, FCSErrors, c)
}

// onHub says whether fs put the interface named iface on a hub (its D2 or
// D5 say so from its counters): its half duplex is right there, and no
// evidence of a duplex mismatch.
func onHub(fs []finding.Finding, iface string) bool {
	for _, f := range fs {
		if f.Iface == iface && (f.Rule == finding.D2 || f.Rule == finding.D5) && strings.HasPrefix(f.Summary, hubSummary) {
			return true
		}
	}
	return false
}
