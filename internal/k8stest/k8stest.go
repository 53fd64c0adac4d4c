// Package k8stest runs a real Kubernetes API server for a test: Debian's
// etcd as its storage and a kube-apiserver built from the Go module proxy
// (make test-k8s builds it, from the module in apiserver/, and names it in
// $BLAST_KUBE_APISERVER). Both listen on 127.0.0.1 only, on free ports,
// with their files in the test's temporary directory, and both are
// stopped when the test ends, also when it fails.
//
// The server authorizes with RBAC alone; the test is its admin by a client
// certificate in the group system:masters, and it signs service-account
// tokens (the TokenRequest API) with a key drawn for the test. It runs no
// controller: what a controller would write (EndpointSlices) the test
// writes itself.
package k8stest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/testkit"
)

// EnvAPIServer names the kube-apiserver binary that make test-k8s built.
const EnvAPIServer = "BLAST_KUBE_APISERVER"

// Bounds of the waits: generous, as a busy host with both CPUs taken
// starts an API server slowly.
const (
	startBound = 3 * time.Minute
	stopBound  = 30 * time.Second
)

// Cluster is a running API server.
type Cluster struct {
	URL    string       // https://127.0.0.1:PORT
	CAFile string       // the CA of the server's certificate (PEM)
	Admin  *http.Client // authenticated as system:masters
	pool   *x509.CertPool
}

// Start runs etcd and kube-apiserver until the test ends. It fails the
// test, never skips it, when either is missing: make test-k8s installs
// etcd-server and builds the API server.
func Start(t *testing.T) *Cluster {
	t.Helper()
	apiBin := os.Getenv(EnvAPIServer)
	if apiBin == "" {
		t.Fatalf("$%s is not set: run make test-k8s, which builds kube-apiserver and names it there", EnvAPIServer)
	}
	if _, err := os.Stat(apiBin); err != nil {
		t.Fatalf("kube-apiserver: %v (make test-k8s builds it)", err)
	}
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd: %v (install Debian's etcd-server: make test-k8s does)", err)
	}
	dir := t.TempDir()
	first := testkit.FreePorts(t, 3)
	etcdClient, etcdPeer, apiPort := first, first+1, first+2

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcdDone := start(t, dir, "etcd", etcdBin,
		"--name=k8stest",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=k8stest="+peerURL,
		"--initial-cluster-state=new",
		"--logger=zap",
	)
	plain := &http.Client{Timeout: 10 * time.Second}
	waitOK(t, plain, etcdURL+"/health", "etcd's /health", etcdDone)

	c := &Cluster{URL: fmt.Sprintf("https://127.0.0.1:%d", apiPort)}
	pki := newPKI(t, dir)
	c.CAFile, c.pool = pki.caFile, pki.pool
	apiDone := start(t, dir, "kube-apiserver", apiBin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--tls-cert-file="+pki.serverCert,
		"--tls-private-key-file="+pki.serverKey,
		"--client-ca-file="+pki.caFile,
		"--anonymous-auth=false",
		"--authorization-mode=RBAC",
		"--service-account-issuer="+c.URL,
		"--service-account-key-file="+pki.saPub,
		"--service-account-signing-key-file="+pki.saKey,
		// ClusterIPs are drawn from here (no traffic goes there); the
		// Service of the API server itself is not kept (its address is
		// loopback, which an Endpoints object may not hold).
		"--service-cluster-ip-range=198.19.255.0/24",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--enable-priority-and-fairness=false",
	)
	c.Admin = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pki.pool, Certificates: []tls.Certificate{pki.admin}, MinVersion: tls.VersionTLS12,
	}}}
	t.Cleanup(c.Admin.CloseIdleConnections)
	waitOK(t, c.Admin, c.URL+"/readyz", "kube-apiserver's /readyz", apiDone)
	return c
}

// Client is an HTTP client that trusts the server's CA and brings no
// credentials, with rt (if not nil) wrapping its transport.
func (c *Cluster) Client(wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.pool, MinVersion: tls.VersionTLS12}}
	if wrap != nil {
		rt = wrap(rt)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: rt}
}

// Do sends a request as the admin: body (if not nil) is JSON unless
// contentType says otherwise. It returns the status and the answer.
func (c *Cluster) Do(t *testing.T, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := c.Admin.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// Must is Do that fails the test unless the answer is one of want (200
// and 201 when none is given), and decodes a JSON answer into out (if
// not nil).
func (c *Cluster) Must(t *testing.T, method, path string, in, out any, want ...int) {
	t.Helper()
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			t.Fatal(err)
		}
	}
	code, b := c.Do(t, method, path, "", body)
	if len(want) == 0 {
		want = []int{http.StatusOK, http.StatusCreated}
	}
	ok := false
	for _, w := range want {
		ok = ok || code == w
	}
	if !ok {
		t.Fatalf("%s %s: %d, want %v: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode the answer: %v", method, path, err)
		}
	}
}

// Token is a token of the ServiceAccount sa in namespace ns from the
// TokenRequest API, as the kubelet would mount it in a pod.
func (c *Cluster) Token(t *testing.T, ns, sa string) string {
	t.Helper()
	req := map[string]any{
		"apiVersion": "authentication.k8s.io/v1",
		"kind":       "TokenRequest",
		"spec":       map[string]any{"expirationSeconds": 3600},
	}
	var resp struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	c.Must(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+sa+"/token", req, &resp, http.StatusCreated)
	if resp.Status.Token == "" {
		t.Fatalf("TokenRequest for %s/%s: no token in the answer", ns, sa)
	}
	return resp.Status.Token
}

// start runs a program until the test ends: its output goes to
// DIR/NAME.log, shown (its end) when the test failed. The channel is
// closed when the program ends.
func start(t *testing.T, dir, name, bin string, args ...string) <-chan struct{} {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
			t.Errorf("%s ended before the test did: %v", name, cmd.ProcessState)
		default:
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(stopBound):
				cmd.Process.Kill()
				<-done
			}
		}
		logf.Close()
		if t.Failed() {
			t.Logf("the end of %s's output (%s):\n%s", name, logPath, tail(logPath, 6000))
		}
	})
	return done
}

// waitOK waits until GET url answers 200, and fails the test naming what
// when it does not within startBound, or at once when the server ended
// (done closed).
func waitOK(t *testing.T, client *http.Client, url, what string, done <-chan struct{}) {
	t.Helper()
	var last string
	ok := testkit.Eventually(startBound, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err.Error()
			return false
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		last = fmt.Sprintf("%d: %s", resp.StatusCode, b)
		return resp.StatusCode == http.StatusOK
	})
	select {
	case <-done:
		t.Fatalf("%s: the server ended before it answered", what)
	default:
	}
	if !ok {
		t.Fatalf("waited %v for %s to answer 200; last answer: %s", startBound, what, last)
	}
}

func tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// pki is the keys and certificates of one cluster, written in dir.
type pki struct {
	caFile, serverCert, serverKey, saKey, saPub string
	pool                                        *x509.CertPool
	admin                                       tls.Certificate
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	p := &pki{
		caFile:     filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "server.crt"),
		serverKey:  filepath.Join(dir, "server.key"),
		saKey:      filepath.Join(dir, "sa.key"),
		saPub:      filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "blast-k8stest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)

	leaf := func(serial int64, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      subject,
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	srvDER, srvKey := leaf(2, pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	writePEM(t, p.serverCert, "CERTIFICATE", srvDER)
	writePEM(t, p.serverKey, "PRIVATE KEY", pkcs8(t, srvKey))

	admDER, admKey := leaf(3, pkix.Name{CommonName: "blast-test-admin", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil)
	p.admin = tls.Certificate{Certificate: [][]byte{admDER}, PrivateKey: admKey}

	sa := newKey(t)
	writePEM(t, p.saKey, "PRIVATE KEY", pkcs8(t, sa))
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, p.saPub, "PUBLIC KEY", pub)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pkcs8(t *testing.T, k *ecdsa.PrivateKey) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(errors.Join(fmt.Errorf("write %s", path), err))
	}
}
