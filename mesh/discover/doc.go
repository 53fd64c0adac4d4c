// Package discover finds the blast agents of a mesh: the value of
// `blast mesh --peers SPEC`. Each agent serves tests on a data port
// (default 5201) and has an HTTP control endpoint on a control port
// (default: the data port + 1). Parse reads a SPEC into a Source,
// Discover looks its agents up once, and Wait polls until enough of them
// are there (the agents of a DaemonSet start at different times).
//
// A SPEC is one of three sources.
//
// FILE is a peers file: one agent per line, NAME ADDRESS[:PORT]. ADDRESS
// is an IP address or a host name; an IPv6 address is written bare
// (2001:2::1) or, with a port, in brackets ([2001:2::1]:5201). A # starts
// a comment; blank lines are ignored. Names and addresses must be unique.
// A file has at most 100,000 lines of at most 1,024 bytes each. Errors
// name the file and the line:
//
//	peers.txt:3: "node-c" has no address: want NAME ADDRESS[:PORT]
//
// dns:NAME asks DNS. First for SRV records: of NAME itself if it starts
// with an underscore (dns:_blast._tcp.blast.ns.svc.cluster.local), else
// of _blast._tcp.NAME, then of _data._tcp.NAME (Kubernetes names the SRV
// records of a headless Service by port, and the Service of
// deploy/kubernetes names its data port "data": dns:blast.NS.svc.cluster.local
// finds its agents with their ports). Each SRV record gives an agent's host (its target)
// and data port; the target is resolved to its addresses and the agent
// gets the lowest (IPv4 before IPv6). An agent is named by its target,
// shortened to the first label when all targets share the rest
// (node-a.blast.test and node-b.blast.test are node-a and node-b). When
// NAME has no SRV records, or the SRV lookup fails (no DNS server
// answers in a lab's namespace) and NAME has A or AAAA records, its A
// records are the agents (its AAAA records
// if it has no A record, as one agent may have both), on the default data
// port, each named by its address. Lookups go through
// Options.Resolver, so the system's resolver rules apply: the Go resolver
// and the C library's both read /etc/hosts before DNS (as
// /etc/nsswitch.conf says), and a name on several lines of /etc/hosts has
// all of their addresses. In a lab, `ip netns exec NS blast mesh
// --peers dns:agents` sees /etc/netns/NS/hosts as /etc/hosts, so lines
// such as "198.18.0.2 agents" and "198.18.0.3 agents" there make a mesh
// of two without a DNS server.
//
// k8s:SERVICE and k8s:NAMESPACE/SERVICE ask the Kubernetes API server
// from inside a pod, with the pod's service account: the server from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, the token, CA and
// namespace from /var/run/secrets/kubernetes.io/serviceaccount (the token
// is read afresh for every request, as it rotates). It lists the
// EndpointSlices of the Service (discovery.k8s.io/v1), so the
// ServiceAccount needs get and list on endpointslices.discovery.k8s.io in
// that namespace (deploy/kubernetes has the Role). Every endpoint that is
// not known unready and not terminating is an agent, each address once:
// named by its nodeName (else the pod's name, else the address), in its
// zone, on the slice's port named "data" (else its first TCP port) and
// the port named "control" (else data + 1). A dual-stack Service gives
// its IPv4 endpoints only.
//
// Whatever the source, peers come back sorted by name, one per address
// and data port; two peers with one name are an error that names both.
package discover
