// Package plan decides which tests `blast mesh` runs and when: given the
// agents (nodes 0..N-1, each with a name and perhaps a zone) and a mode, it
// returns a Plan of ordered src -> dst tests grouped for the runner.
//
// # Rounds and steps
//
// A Plan is a list of rounds; a round is a list of steps; a step is a set
// of tests that run at the same time. Steps run one after the other, round
// after round, so the time a plan takes is about its number of steps times
// the time of one test (Plan.Estimate). In every mode but fan-in and all,
// a step is node-exclusive: no node is in two tests of one step, as sender
// or receiver, so a test measures the path and not a neighbour's traffic.
// With the isolate option every step holds exactly one test: nothing runs
// beside it, and the plan takes as many steps as it has tests.
//
// # Modes
//
//   - pairs: every ordered pair once, N(N-1) tests. The rounds are a
//     round-robin tournament (the circle method): N-1 rounds for even N, N
//     for odd N (one node sits each round out). Each round has two steps:
//     every matched pair one way (the lower-numbered node sends), then the
//     other way. 1000 nodes take 999 rounds, 1998 steps.
//   - fan-in, fan-in:NAME: every other node sends to one server (node 0, or
//     the node named NAME) at once: one round of one step. With the
//     baseline option a round of one step per client comes first (phase
//     "baseline": each client alone), then the all-at-once round.
//   - all: everyone at once, a bisection stress test. Round r (1..N-1) is
//     one step in which node i sends to node (i+r) mod N: every node sends
//     once and receives once per step, and every ordered pair runs once.
//   - ring:K: each node sends to its next K nodes (i+1..i+K mod N). Round d
//     is "each node to its d-th next node", 2 or 3 node-exclusive steps.
//   - sample:K: each node sends to K distinct random peers and receives
//     from exactly K. The nodes are shuffled and each of K distinct random
//     shifts s gives one round (shuffled position p sends to p+s), of 2 or
//     3 node-exclusive steps. The same Seed gives the same plan. N = 10,000
//     with K = 3 is planned in milliseconds.
//
// fan-in and all run many tests into a node at once by design, so they
// refuse the isolate and zones options (isolate would leave nothing of what
// they measure; use pairs with isolate to test one pair at a time).
//
// # Zones
//
// With Zones "same" only pairs of nodes in the same zone are tested; with
// "cross" only pairs in different zones. Nodes with no zone form one zone,
// "". Zones apply to pairs, ring:K and sample:K:
//
//   - pairs: same runs the tournament of every zone side by side (rounds as
//     many as the largest zone needs); cross runs the tournament of all
//     nodes without the same-zone pairs (N-1 or N rounds however the zones
//     fall).
//   - ring:K, sample:K with same: the ring or the sample within each zone;
//     every zone needs more than K nodes.
//   - ring:K, sample:K with cross: the nodes are laid out zone after zone
//     and shifted by at least the size M of the largest zone, so every peer
//     is in another zone and every node still sends K and receives K. That
//     is possible only when no zone holds more than half of the nodes, and
//     for K up to N-2M+1; sample:K goes on up to N-M by drawing each round
//     afresh and repairing repeated peers, and says so when it finds no
//     balanced choice.
//
// Build checks everything up front and answers with one line naming the
// cause and the fix; a plan it returns is valid. Describe prints a plan for
// --dry-run.
package plan
