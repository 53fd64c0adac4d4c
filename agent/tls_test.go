package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA makes a CA and a certificate it signs for the names (IP
// addresses or DNS names), written as PEM files in dir: ca.pem, and
// cert.pem with key.pem.
func testCA(t *testing.T, dir string, names ...string) {
	t.Helper()
	write := func(name, kind string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "blast test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "blast agent"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	write("ca.pem", "CERTIFICATE", caDER)
	write("cert.pem", "CERTIFICATE", der)
	write("key.pem", "EC PRIVATE KEY", kb)
}

// With --tls-cert and --tls-key the control endpoint speaks TLS: a mesh
// that trusts the CA is served, by the agent's address or by a name its
// certificate carries; plain HTTP, an unknown CA and a name the
// certificate lacks are refused; and a test between two TLS agents runs.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	testCA(t, dir, "127.0.0.1", "blast-agent")
	other := t.TempDir()
	testCA(t, other, "127.0.0.1")
	srvTLS, err := LoadTLS(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := start(t, func(c *Config) { c.TLS = srvTLS })
	ctx := context.Background()
	client := func(t *testing.T, caDir, name string) *Client {
		t.Helper()
		cfg, err := ClientTLS(filepath.Join(caDir, "ca.pem"), name)
		if err != nil {
			t.Fatal(err)
		}
		return &Client{Addr: a.ControlAddr().String(), Token: token, TLS: cfg}
	}
	for _, name := range []string{"", "blast-agent"} {
		c := client(t, dir, name)
		if in, err := c.Info(ctx); err != nil || in.Name != "node-a" {
			t.Errorf("server name %q: info %+v, %v", name, in, err)
		}
	}
	plain := &Client{Addr: a.ControlAddr().String(), Token: token}
	if _, err := plain.Info(ctx); err == nil {
		t.Errorf("plain HTTP to a TLS endpoint was answered")
	}
	if _, err := client(t, other, "").Info(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a certificate from another CA: %v, want a certificate error", err)
	}
	if _, err := client(t, dir, "someone-else").Info(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a name the certificate lacks: %v, want a certificate error", err)
	}
	b, _ := start(t, func(c *Config) { c.TLS = srvTLS; c.Name = "node-b" })
	r, err := client(t, dir, "").Test(ctx, TestRequest{Host: "127.0.0.1", Port: dataPort(b), Seconds: 1, Streams: 1})
	if err != nil || r.Err != "" || r.Bytes == 0 {
		t.Errorf("a test between TLS agents: %+v, %v", r, err)
	}
	if _, err := LoadTLS(filepath.Join(dir, "cert.pem"), filepath.Join(other, "key.pem")); err == nil {
		t.Errorf("a certificate with another's key was loaded")
	}
	if _, err := ClientTLS(filepath.Join(dir, "key.pem"), ""); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA file without a certificate: %v", err)
	}
}
