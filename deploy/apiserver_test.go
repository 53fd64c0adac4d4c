//go:build k8s

// The tests against a real kube-apiserver (internal/k8stest), run by
// make test-k8s: cd deploy && go test -tags k8s . with $BLAST_KUBE_APISERVER.

package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blastnet/blast/internal/blasttest"
	"github.com/blastnet/blast/internal/k8stest"
	"github.com/blastnet/blast/internal/testkit"
	"github.com/blastnet/blast/mesh/discover"
	"github.com/google/go-cmp/cmp"
)

// apiResource is where the API server serves a kind.
type apiResource struct {
	path       string // /api/v1 or /apis/GROUP/VERSION
	name       string // the plural: endpointslices
	namespaced bool
}

// resources maps apiVersion/kind to its resource, from the server's
// discovery documents.
type resources map[string]apiResource

func (rs resources) of(t *testing.T, c *k8stest.Cluster, apiVersion, kind string) apiResource {
	t.Helper()
	if r, ok := rs[apiVersion+"/"+kind]; ok {
		return r
	}
	path := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		path = "/api/" + apiVersion
	}
	var list struct {
		Resources []struct {
			Name       string `json:"name"`
			Kind       string `json:"kind"`
			Namespaced bool   `json:"namespaced"`
		} `json:"resources"`
	}
	c.Must(t, http.MethodGet, path, nil, &list)
	for _, r := range list.Resources {
		if !strings.Contains(r.Name, "/") { // not a subresource
			rs[apiVersion+"/"+r.Kind] = apiResource{path: path, name: r.Name, namespaced: r.Namespaced}
		}
	}
	r, ok := rs[apiVersion+"/"+kind]
	if !ok {
		t.Fatalf("the API server serves no %s in %s", kind, apiVersion)
	}
	return r
}

// path is the URL path of the collection of o's kind, in o's namespace.
func (rs resources) path(t *testing.T, c *k8stest.Cluster, o object) string {
	t.Helper()
	r := rs.of(t, c, o.APIVersion, o.Kind)
	path := r.path
	if r.namespaced {
		path += "/namespaces/" + o.Metadata.Namespace
	}
	return path + "/" + r.name
}

// create creates o, for real or as a dry run, refusing unknown and
// duplicate fields, and returns the status and the answer.
func create(t *testing.T, c *k8stest.Cluster, rs resources, o object, dryRun bool) (int, []byte) {
	t.Helper()
	path := rs.path(t, c, o) + "?fieldValidation=Strict"
	if dryRun {
		path += "&dryRun=All"
	}
	return c.Do(t, http.MethodPost, path, "", o.json)
}

// apply applies o (server-side apply), as kubectl apply --server-side
// would, and returns the status and the answer.
func apply(t *testing.T, c *k8stest.Cluster, rs resources, o object) (int, []byte) {
	t.Helper()
	path := rs.path(t, c, o) + "/" + o.Metadata.Name + "?fieldManager=blast-k8s-test&fieldValidation=Strict"
	return c.Do(t, http.MethodPatch, path, "application/apply-patch+yaml", o.json)
}

// TestAPIServer runs blast's Kubernetes discovery against a real API
// server, with the objects of deploy/kubernetes' base, and validates every
// rendered manifest against the server's own schemas.
func TestAPIServer(t *testing.T) {
	c := k8stest.Start(t)
	rs := resources{}
	var base rendering
	for _, r := range renderAll(t) {
		if r.dir == "base" {
			base = r
		}
	}
	var role object
	for _, o := range base.objects {
		if o.Kind == "Role" {
			role = o
		}
	}
	if role.Metadata.Name == "" {
		t.Fatal("base: no Role")
	}
	ns := role.Metadata.Namespace

	t.Run("DryRun", func(t *testing.T) {
		// Every object of every kustomization created as a dry run
		// against the schemas of the server's release, a field it does
		// not know refused: the Namespaces first, then, in the Namespace
		// created, the rest.
		all := renderAll(t)
		for _, namespaces := range []bool{true, false} {
			for _, r := range all {
				for _, o := range r.objects {
					if (o.Kind == "Namespace") != namespaces {
						continue
					}
					if code, b := create(t, c, rs, o, true); code != http.StatusCreated {
						t.Errorf("%s: %s %s: the API server refused it (%d): %s", r.dir, o.Kind, o.Metadata.Name, code, b)
					}
				}
			}
			if namespaces {
				for _, o := range base.objects {
					if o.Kind == "Namespace" {
						if code, b := apply(t, c, rs, o); code != http.StatusCreated {
							t.Fatalf("apply Namespace %s: %d: %s", o.Metadata.Name, code, b)
						}
					}
				}
			}
		}
		// And it can fail: a field of no schema is refused.
		var svc map[string]any
		bad := base.find(t, "Service", "", &svc)
		svc["spec"].(map[string]any)["clusterIPs2"] = []string{"None"}
		var err error
		if bad.json, err = json.Marshal(svc); err != nil {
			t.Fatal(err)
		}
		if code, b := create(t, c, rs, bad, true); code != http.StatusBadRequest || !strings.Contains(string(b), "clusterIPs2") {
			t.Errorf("a Service with spec.clusterIPs2: %d, want 400 naming the field: %s", code, b)
		}
	})

	// The objects the mesh's discovery needs, as kubectl apply would
	// create them.
	for _, o := range base.objects {
		switch o.Kind {
		case "ServiceAccount", "Role", "RoleBinding", "Service":
			if code, b := apply(t, c, rs, o); code != http.StatusOK && code != http.StatusCreated {
				t.Fatalf("apply %s %s/%s: %d: %s", o.Kind, o.Metadata.Namespace, o.Metadata.Name, code, b)
			}
		}
	}

	// The pod's service-account files, as the kubelet mounts them: a
	// token from the TokenRequest API, the CA, the namespace.
	var svc object
	for _, o := range base.objects {
		if o.Kind == "Service" {
			svc = o
		}
	}
	var rb roleBinding
	rbObj := base.find(t, "RoleBinding", "", &rb)
	meshSA := rb.Subjects[0].Name
	dir := t.TempDir()
	opt := discover.Options{
		APIServer:     c.URL,
		TokenFile:     filepath.Join(dir, "token"),
		CAFile:        c.CAFile,
		NamespaceFile: filepath.Join(dir, "namespace"),
	}
	for path, s := range map[string]string{opt.TokenFile: c.Token(t, ns, meshSA), opt.NamespaceFile: ns} {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src, err := discover.Parse("k8s:" + svc.Metadata.Name)
	if err != nil {
		t.Fatal(err)
	}

	// What the EndpointSlice controller would write for 250 agents, one
	// slice each (more slices than a page of blast's listing holds), one
	// agent not ready yet, and the slice of another Service.
	const agents = 250
	slicesPath := "/apis/discovery.k8s.io/v1/namespaces/" + ns + "/endpointslices"
	slice := func(name, service, addr, node string, ready bool) map[string]any {
		return map[string]any{
			"apiVersion": "discovery.k8s.io/v1",
			"kind":       "EndpointSlice",
			"metadata": map[string]any{
				"name": name,
				"labels": map[string]string{
					"kubernetes.io/service-name":             service,
					"endpointslice.kubernetes.io/managed-by": "blast-k8s-test",
				},
			},
			"addressType": "IPv4",
			"endpoints": []map[string]any{{
				"addresses":  []string{addr},
				"conditions": map[string]bool{"ready": ready, "serving": ready, "terminating": false},
				"nodeName":   node,
				"zone":       "zone-a",
				"targetRef":  map[string]string{"kind": "Pod", "name": "blast-agent-" + node, "namespace": ns},
			}},
			"ports": []map[string]any{
				{"name": "data", "protocol": "TCP", "port": 5201},
				{"name": "data-udp", "protocol": "UDP", "port": 5201},
				{"name": "control", "protocol": "TCP", "port": 5202},
			},
		}
	}
	var want []discover.Peer
	for i := range agents {
		addr := fmt.Sprintf("198.18.%d.%d", i/200, i%200+1)
		node := fmt.Sprintf("node-%03d", i)
		c.Must(t, http.MethodPost, slicesPath, slice(fmt.Sprintf("%s-%03d", svc.Metadata.Name, i), svc.Metadata.Name, addr, node, true), nil)
		want = append(want, discover.Peer{Name: node, Host: addr, DataPort: 5201, ControlPort: 5202, Zone: "zone-a"})
	}
	lateName := svc.Metadata.Name + "-late"
	late := slice(lateName, svc.Metadata.Name, "198.19.0.1", "node-late", false)
	c.Must(t, http.MethodPost, slicesPath, late, nil)
	c.Must(t, http.MethodPost, slicesPath, slice("other-000", "other", "198.19.0.2", "node-other", true), nil)

	// requests counts the lists blast sends, pages included.
	var requests atomic.Int64
	counted := opt
	counted.HTTPClient = c.Client(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	})
	t.Cleanup(counted.HTTPClient.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	t.Run("Discover", func(t *testing.T) {
		got, err := discover.Discover(ctx, src, opt) // trusting CAFile
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the agents (-want +got):\n%s", diff)
		}
		requests.Store(0)
		if _, err := discover.Discover(ctx, src, counted); err != nil {
			t.Fatal(err)
		}
		if n, pages := requests.Load(), int64(agents/100+1); n < pages {
			t.Errorf("%d slices listed in %d requests, want %d pages of 100 or more", agents+1, n, pages)
		}
	})

	t.Run("WaitSeesUpdate", func(t *testing.T) {
		requests.Store(0)
		type result struct {
			peers []discover.Peer
			err   error
		}
		done := make(chan result, 1)
		go func() {
			p, err := discover.Wait(ctx, src, counted, agents+1, 100*time.Millisecond)
			done <- result{p, err}
		}()
		// One whole poll (3 pages) found 250 of the 251 agents wanted.
		testkit.WaitFor(t, 2*time.Minute, "a first poll of all pages", func() bool { return requests.Load() >= 3 })
		select {
		case r := <-done:
			t.Fatalf("Wait returned before the update: %d agents, %v", len(r.peers), r.err)
		default:
		}
		patch := `{"endpoints":[{"addresses":["198.19.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":"node-late","zone":"zone-a"}]}`
		if code, b := c.Do(t, http.MethodPatch, slicesPath+"/"+lateName, "application/merge-patch+json", []byte(patch)); code != http.StatusOK {
			t.Fatalf("mark node-late ready: %d: %s", code, b)
		}
		var r result
		select {
		case r = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatal("Wait did not see node-late become ready within 2 minutes")
		}
		if r.err != nil {
			t.Fatal(r.err)
		}
		wantAll := append(append([]discover.Peer(nil), want...), discover.Peer{Name: "node-late", Host: "198.19.0.1", DataPort: 5201, ControlPort: 5202, Zone: "zone-a"})
		if diff := cmp.Diff(wantAll, r.peers); diff != "" {
			t.Errorf("the agents after the update (-want +got):\n%s", diff)
		}
	})

	// blast mesh itself, in a pod's view: its own mount namespace with the
	// service account's files where the kubelet mounts them, and the
	// API server in KUBERNETES_SERVICE_HOST and _PORT.
	bin := blastBin(t)
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	inPod := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		const sa = "/run/secrets/kubernetes.io/serviceaccount"
		script := `mount -t tmpfs -o size=1m,mode=0755 blast-k8s-test /run && mkdir -p ` + sa + ` &&
cp "$1/token" "$1/ca.crt" "$1/namespace" ` + sa + `/ && shift && exec "$@"`
		cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-ec", script, "sh", dir, bin}, args...)...)
		host, port, _ := strings.Cut(strings.TrimPrefix(c.URL, "https://"), ":")
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port}
		out, err := cmd.CombinedOutput()
		lines := strings.SplitAfterN(string(out), "\n", 4) // not the whole plan
		t.Logf("blast %s:\n%s", strings.Join(args, " "), strings.Join(lines[:min(len(lines), 3)], ""))
		return string(out), err
	}
	cliArgs := []string{"mesh", "--peers", "k8s:" + svc.Metadata.Name, "--dry-run", "--wait", "120", "--min-agents", fmt.Sprint(agents + 1)}

	t.Run("MeshCommand", func(t *testing.T) {
		out, err := inPod(t, cliArgs...)
		if err != nil {
			t.Fatalf("blast mesh: %v", err)
		}
		if w := fmt.Sprintf("blast mesh: %d agents from k8s:%s\n", agents+1, svc.Metadata.Name); !strings.Contains(out, w) {
			t.Errorf("blast mesh did not say %q", w)
		}
	})

	t.Run("ForbiddenNamesRole", func(t *testing.T) {
		c.Must(t, http.MethodDelete, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings/"+rbObj.Metadata.Name, nil, nil)
		// The authorizer learns of the deletion from its informer: wait
		// until it denies, as blast will be answered.
		user := "system:serviceaccount:" + ns + ":" + meshSA
		review := map[string]any{
			"apiVersion": "authorization.k8s.io/v1",
			"kind":       "SubjectAccessReview",
			"spec": map[string]any{
				"user":               user,
				"groups":             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				"resourceAttributes": map[string]string{"namespace": ns, "verb": "list", "group": "discovery.k8s.io", "resource": "endpointslices"},
			},
		}
		testkit.WaitFor(t, 2*time.Minute, "RBAC to deny "+user+" the list", func() bool {
			var ans struct {
				Status struct {
					Allowed bool `json:"allowed"`
				} `json:"status"`
			}
			c.Must(t, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review, &ans)
			return !ans.Status.Allowed
		})
		_, err := discover.Discover(ctx, src, opt)
		if err == nil {
			t.Fatal("discovery without the RoleBinding: no error")
		}
		t.Logf("without the RoleBinding: %v", err)
		for _, w := range []string{"403 Forbidden", `"` + user + `"`, "the Role " + role.Metadata.Name + " "} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the error does not say %q: %v", w, err)
			}
		}
		out, err := inPod(t, cliArgs...)
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("blast mesh without the RoleBinding: %v, want exit status 1", err)
		}
		if w := "the Role " + role.Metadata.Name + " "; !strings.Contains(out, w) || !strings.Contains(out, "403 Forbidden") {
			t.Errorf("blast mesh's error does not say 403 Forbidden and %q", w)
		}
		// Wait gives up at once: polling cannot mend a missing permission.
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
		defer wcancel()
		if _, err := discover.Wait(wctx, src, opt, 2, 100*time.Millisecond); err == nil || wctx.Err() != nil {
			t.Errorf("Wait without the RoleBinding: %v (ctx %v), want the 403 at once", err, wctx.Err())
		}
	})
}

// blastBin is the blast binary make test-k8s built ($BLAST_TEST_BIN), or
// one built for this test.
func blastBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv(blasttest.BinEnv); b != "" {
		return b
	}
	b, err := blasttest.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
