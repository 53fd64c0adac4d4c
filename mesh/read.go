package mesh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotDocument is the error (wrapped) for input that is not a blast mesh
// Document.
var ErrNotDocument = errors.New("not a blast mesh document")

// MaxDocumentBytes bounds what ReadDocument reads: 1 GiB, a mesh of some
// 2,000 nodes measured both ways.
const MaxDocumentBytes = 1 << 30

// ReadFile reads the Document in the file at path; its errors start with
// the path (mesh.json: not a blast mesh document ...).
func ReadFile(path string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	d, err := ReadDocument(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// ReadDocument reads one Document as `blast mesh` writes it. Input that is
// not JSON, or JSON without "meta": {"tool": "blast"} (another tool's
// output, blast client -J), is refused with an error wrapping
// ErrNotDocument that says how to make one. At most MaxDocumentBytes are
// read.
func ReadDocument(r io.Reader) (*Document, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("%w: larger than %d MiB", ErrNotDocument, MaxDocumentBytes>>20)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: the input is empty: make it with blast mesh", ErrNotDocument)
	}
	var d Document
	if err := json.Unmarshal(data, &d); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			line := 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("%w: not JSON (line %d: %v): make it with blast mesh", ErrNotDocument, line, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrNotDocument, err)
	}
	if d.Meta.Tool != "blast" {
		return nil, fmt.Errorf("%w (no \"meta.tool\": \"blast\"): make it with blast mesh", ErrNotDocument)
	}
	return &d, nil
}
