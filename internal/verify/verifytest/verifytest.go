// Package verifytest plants corruption in a lab's path for the tests of
// --verify (internal/verify): a tc program on a lab host's interface
// flips a byte in some of the data packets it sends and fixes their TCP
// or UDP checksum, so that the receiving kernel accepts them and only an
// end-to-end check sees the damage. (netem's corrupt, the usual tool,
// breaks the checksum: the kernel drops the packet, which TCP then
// retransmits and UDP loses.)
package verifytest
