// Command image builds blast's container image without a daemon or a
// registry: the static blast binary on an empty (scratch) base, as an OCI
// image layout and as a tarball that docker load and podman load read.
//
//	go run . -binary ../../bin/image/blast -oci ../../bin/blast-image.oci -tar ../../bin/blast-image.tar
//
// (make image does this.) The image is the same as the Dockerfile's: /blast
// as the entrypoint, `agent` as the command, user 65532:65532 with an
// /etc/passwd entry and a home, a /tmp; no shell, no C library, no CA
// certificates (blast checks TLS peers against the CA it is given). Every
// file is dated by SOURCE_DATE_EPOCH, or the commit's time, so the same
// binary gives the same digest.
//
// It lives in a module of its own so blast's go.mod does not carry
// go-containerregistry.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binary := fs.String("binary", "", "the static blast binary (CGO_ENABLED=0 go build ./cmd/blast)")
	oci := fs.String("oci", "", "write the image as an OCI image layout in this directory")
	tarPath := fs.String("tar", "", "write the image as a tarball for docker load / podman load")
	tag := fs.String("tag", "ghcr.io/blastnet/blast:latest", "the image's name and tag")
	source := fs.String("source", "https://github.com/blastnet/blast", "label "+LabelSource)
	version := fs.String("version", "", "label "+LabelVersion+" (such as git describe --tags --always --dirty)")
	revision := fs.String("revision", "", "label "+LabelRevision+" (default: the commit the binary was built from)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "image: unexpected argument %q: everything is a flag (-help)\n", fs.Arg(0))
		return exitUsage
	}
	if *binary == "" || (*oci == "" && *tarPath == "") {
		fmt.Fprintln(stderr, "image: give -binary and -oci or -tar (or both), such as: -binary bin/image/blast -oci bin/blast-image.oci")
		return exitUsage
	}
	ref, err := name.NewTag(*tag, name.StrictValidation)
	if err != nil {
		fmt.Fprintf(stderr, "image: -tag %q: %v: give REGISTRY/REPOSITORY:TAG\n", *tag, err)
		return exitUsage
	}
	if *oci != "" {
		if err := CheckLayoutDir(*oci); err != nil {
			fmt.Fprintf(stderr, "image: -oci: %v\n", err)
			return exitError
		}
	}
	info, err := ReadBinaryInfo(*binary)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return exitError
	}
	if err := info.CheckStatic(); err != nil {
		fmt.Fprintf(stderr, "image: %s: %v\n", *binary, err)
		return exitError
	}
	created, err := createdTime(os.Getenv("SOURCE_DATE_EPOCH"), info)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return exitUsage
	}
	if *revision == "" {
		*revision = info.Revision
	}
	if info.Modified {
		fmt.Fprintf(stderr, "image: note: %s was built from a work tree with changes not committed; its revision label names the commit below them\n", *binary)
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return exitError
	}
	img, err := Build(Config{Binary: bin, Arch: info.Arch, Created: created, Source: *source, Version: *version, Revision: *revision})
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return exitError
	}
	digest, err := img.Digest()
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return exitError
	}
	if *oci != "" {
		if err := WriteLayout(*oci, img, ref); err != nil {
			fmt.Fprintf(stderr, "image: %v\n", err)
			return exitError
		}
	}
	if *tarPath != "" {
		if err := WriteTarball(*tarPath, img, ref); err != nil {
			fmt.Fprintf(stderr, "image: %v\n", err)
			return exitError
		}
	}
	size, err := Size(img)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s@%s linux/%s, created %s, %d bytes compressed (manifest, config, layer), %d bytes unpacked\n",
		ref.Name(), digest, info.Arch, created.Format(time.RFC3339), size.Compressed, size.Unpacked)
	for _, p := range []string{*oci, *tarPath} {
		if p != "" {
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
	}
	return exitOK
}

// createdTime is SOURCE_DATE_EPOCH when set, else the time of the commit
// the binary was built from.
func createdTime(epoch string, info BinaryInfo) (time.Time, error) {
	if epoch != "" {
		s, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil || s < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: give seconds since 1970 (such as git log -1 --format=%%ct)", epoch)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	if !info.CommitTime.IsZero() {
		return info.CommitTime.UTC(), nil
	}
	return time.Time{}, errors.New("no date for the image's files: set SOURCE_DATE_EPOCH (such as $(git log -1 --format=%ct)), or build the binary with -buildvcs=true in a git checkout")
}
