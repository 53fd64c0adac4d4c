package deploy

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/blastnet/blast/mesh/discover"
	"github.com/google/go-cmp/cmp"
	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// root is the directory of the kustomizations.
const root = "kubernetes"

// variant is what a kustomization promises beyond the base.
type variant struct {
	hostnet bool // agents on the host network, namespace privileged
	afxdp   bool // agents with the AF_XDP capabilities, mesh with --backend=afxdp
	cron    bool // the mesh as a CronJob, no Job
	tls     bool // TLS on the control endpoints, from the Secret blast-agent-tls
}

// variants lists every kustomization under kubernetes/ with what it
// promises. A kustomization that is not listed fails TestVariantsListed, so
// a new overlay comes with its promises.
var variants = map[string]variant{
	".":                      {},
	"base":                   {},
	"overlays/cronjob":       {cron: true},
	"overlays/hostnet":       {hostnet: true},
	"overlays/afxdp":         {afxdp: true},
	"overlays/hostnet-afxdp": {hostnet: true, afxdp: true, cron: true},
	"overlays/tls":           {tls: true},
}

// The agents' ports in the base.
const (
	dataPort    = 5201
	controlPort = 5202
)

// rendering is the output of one kustomization.
type rendering struct {
	dir     string // relative to kubernetes/
	v       variant
	objects []object
	yaml    string // the whole output, as kubectl would apply it
}

// object is one rendered object: its JSON, and enough decoded to find it.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   meta   `json:"metadata"`
	json       []byte
	yaml       []byte
}

type meta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// render builds the kustomization in dir of fSys, as `kubectl kustomize`
// would, in process.
func render(fSys filesys.FileSystem, dir string) (objects []object, yaml string, err error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(fSys, dir)
	if err != nil {
		return nil, "", err
	}
	all, err := rm.AsYaml()
	if err != nil {
		return nil, "", err
	}
	for _, r := range rm.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, "", err
		}
		y, err := r.AsYAML()
		if err != nil {
			return nil, "", err
		}
		o := object{json: j, yaml: y}
		if err := json.Unmarshal(j, &o); err != nil {
			return nil, "", err
		}
		objects = append(objects, o)
	}
	return objects, string(all), nil
}

var (
	renderOnce sync.Once
	rendered   []rendering
	renderErr  error
)

// renderAll renders every kustomization in variants, once per test binary.
func renderAll(t *testing.T) []rendering {
	t.Helper()
	renderOnce.Do(func() {
		abs, err := filepath.Abs(root)
		if err != nil {
			renderErr = err
			return
		}
		dirs := make([]string, 0, len(variants))
		for d := range variants {
			dirs = append(dirs, d)
		}
		slices.Sort(dirs)
		for _, d := range dirs {
			objs, y, err := render(filesys.MakeFsOnDisk(), filepath.Join(abs, d))
			if err != nil {
				renderErr = fmt.Errorf("kustomize build %s: %w", filepath.Join(root, d), err)
				return
			}
			rendered = append(rendered, rendering{dir: d, v: variants[d], objects: objs, yaml: y})
		}
	})
	if renderErr != nil {
		t.Fatal(renderErr)
	}
	return rendered
}

// TestVariantsListed fails on a kustomization under kubernetes/ that
// variants does not list (its promises would go unchecked), and on a
// listed one that is gone.
func TestVariantsListed(t *testing.T) {
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "\nkind: Component") {
			return nil // built only as part of a kustomization
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		found[filepath.ToSlash(rel)] = true
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for d := range found {
		if _, ok := variants[d]; !ok {
			t.Errorf("%s: a kustomization the tests do not know; add it to variants with what it promises", filepath.Join(root, d))
		}
	}
	for d := range variants {
		if !found[d] {
			t.Errorf("variants lists %s, which has no kustomization.yaml", filepath.Join(root, d))
		}
	}
}

// newValidator validates against the committed schemas only.
func newValidator(t *testing.T) validator.Validator {
	t.Helper()
	dir, err := filepath.Abs("schemas")
	if err != nil {
		t.Fatal(err)
	}
	loc := filepath.Join(dir, "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}", "{{ .ResourceKind }}{{ .KindSuffix }}.json")
	v, err := validator.New([]string{loc}, validator.Opts{Strict: true, KubernetesVersion: kubernetesVersion})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemaValid validates every object of every kustomization strictly
// against the committed Kubernetes schemas: no missing schema, no unknown
// field, no wrong type.
func TestSchemaValid(t *testing.T) {
	v := newValidator(t)
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			for _, o := range r.objects {
				name := o.Kind + "/" + o.Metadata.Name
				res := v.ValidateResource(resource.Resource{Path: name, Bytes: o.yaml})
				if res.Status != validator.Valid {
					t.Errorf("%s: %s", name, describe(res))
				}
			}
		})
	}
}

func describe(res validator.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d", res.Status)
	if res.Err != nil {
		fmt.Fprintf(&b, ": %v", res.Err)
	}
	for _, e := range res.ValidationErrors {
		fmt.Fprintf(&b, "\n\t%s: %s", e.Path, e.Msg)
	}
	return b.String()
}

// TestSchemaRejects shows that the validation can fail: an unknown field, a
// wrong type and an unknown kind are each rejected.
func TestSchemaRejects(t *testing.T) {
	v := newValidator(t)
	cases := []struct {
		name, yaml string
	}{
		{"unknown field", `apiVersion: v1
kind: Service
metadata:
  name: x
spec:
  clusterIP: None
  publishNotReadyAdresses: false
`},
		{"unknown field deep in a pod template", `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: x
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i
          securityContext: {runAsNonRot: true}
`},
		{"port of the wrong type", `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: x
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: i
          ports: [{containerPort: data}]
`},
		{"kind without a committed schema", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
`},
	}
	for _, c := range cases {
		res := v.ValidateResource(resource.Resource{Path: c.name, Bytes: []byte(c.yaml)})
		if res.Status == validator.Valid {
			t.Errorf("%s: validated; want it rejected", c.name)
		}
	}
}

// Decoded kinds: only the fields the promises are about.

type podTemplate struct {
	Metadata meta    `json:"metadata"`
	Spec     podSpec `json:"spec"`
}

type podSpec struct {
	ServiceAccountName           string           `json:"serviceAccountName"`
	AutomountServiceAccountToken *bool            `json:"automountServiceAccountToken"`
	HostNetwork                  bool             `json:"hostNetwork"`
	DNSPolicy                    string           `json:"dnsPolicy"`
	SecurityContext              *securityContext `json:"securityContext"`
	Containers                   []container      `json:"containers"`
	Volumes                      []volume         `json:"volumes"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	Privileged               *bool  `json:"privileged"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile"`
}

type container struct {
	Name  string   `json:"name"`
	Image string   `json:"image"`
	Args  []string `json:"args"`
	Env   []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	Ports []struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
		Protocol      string `json:"protocol"`
	} `json:"ports"`
	ReadinessProbe *struct {
		TCPSocket *struct {
			Port intOrString `json:"port"`
		} `json:"tcpSocket"`
	} `json:"readinessProbe"`
	SecurityContext *securityContext `json:"securityContext"`
	VolumeMounts    []struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
}

type volume struct {
	Name   string `json:"name"`
	Secret *struct {
		SecretName string `json:"secretName"`
		Items      []struct {
			Key  string `json:"key"`
			Path string `json:"path"`
		} `json:"items"`
	} `json:"secret"`
}

// intOrString is a port given by number or by name.
type intOrString struct {
	num  int
	name string
}

func (p *intOrString) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &p.num); err == nil {
		return nil
	}
	return json.Unmarshal(b, &p.name)
}

func (p intOrString) String() string {
	if p.name != "" {
		return p.name
	}
	return strconv.Itoa(p.num)
}

type labelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels"`
	MatchExpressions []any             `json:"matchExpressions"`
}

// matches says whether s selects a pod with labels (matchExpressions are
// not used here and count as no match).
func (s labelSelector) matches(labels map[string]string) bool {
	if len(s.MatchExpressions) > 0 {
		return false
	}
	for k, v := range s.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

type daemonSet struct {
	Spec struct {
		Selector labelSelector `json:"selector"`
		Template podTemplate   `json:"template"`
	} `json:"spec"`
}

type job struct {
	Spec struct {
		Template podTemplate `json:"template"`
	} `json:"spec"`
}

type cronJob struct {
	Spec struct {
		JobTemplate struct {
			Spec struct {
				Template podTemplate `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

type service struct {
	Spec struct {
		ClusterIP                string            `json:"clusterIP"`
		PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses"`
		Selector                 map[string]string `json:"selector"`
		Ports                    []struct {
			Name       string      `json:"name"`
			Port       int         `json:"port"`
			TargetPort intOrString `json:"targetPort"`
			Protocol   string      `json:"protocol"`
		} `json:"ports"`
	} `json:"spec"`
}

type policyRule struct {
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	Verbs           []string `json:"verbs"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
}

type role struct {
	Rules []policyRule `json:"rules"`
}

type roleBinding struct {
	RoleRef struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"subjects"`
}

type networkPolicy struct {
	Spec struct {
		PodSelector labelSelector `json:"podSelector"`
		PolicyTypes []string      `json:"policyTypes"`
		Ingress     []struct {
			From []struct {
				PodSelector       *labelSelector `json:"podSelector"`
				NamespaceSelector *labelSelector `json:"namespaceSelector"`
				IPBlock           any            `json:"ipBlock"`
			} `json:"from"`
			Ports []struct {
				Port     *intOrString `json:"port"`
				EndPort  *int         `json:"endPort"`
				Protocol string       `json:"protocol"`
			} `json:"ports"`
		} `json:"ingress"`
	} `json:"spec"`
}

type serviceAccount struct {
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken"`
}

type secret struct {
	Data map[string]string `json:"data"`
}

// find decodes the one object of kind and name into into; it fails the
// test when there is none or more than one.
func (r rendering) find(t *testing.T, kind, name string, into any) object {
	t.Helper()
	var found []object
	for _, o := range r.objects {
		if o.Kind == kind && (name == "" || o.Metadata.Name == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: want one %s %q, found %d", r.dir, kind, name, len(found))
	}
	if err := json.Unmarshal(found[0].json, into); err != nil {
		t.Fatalf("%s: decode %s %s: %v", r.dir, kind, found[0].Metadata.Name, err)
	}
	return found[0]
}

func (r rendering) count(kind string) int {
	n := 0
	for _, o := range r.objects {
		if o.Kind == kind {
			n++
		}
	}
	return n
}

// agent returns the agents' DaemonSet and its container.
func (r rendering) agent(t *testing.T) (*daemonSet, *container) {
	t.Helper()
	var ds daemonSet
	r.find(t, "DaemonSet", "blast-agent", &ds)
	c := containerNamed(t, r.dir+": DaemonSet blast-agent", ds.Spec.Template.Spec.Containers, "agent")
	return &ds, c
}

// mesh returns the mesh's pod template, from its Job or CronJob as the
// variant says, and its container.
func (r rendering) mesh(t *testing.T) (*podTemplate, *container) {
	t.Helper()
	var tpl podTemplate
	if r.v.cron {
		if n := r.count("Job"); n != 0 {
			t.Fatalf("%s: the mesh is a CronJob here, but %d Job(s) are left too", r.dir, n)
		}
		var cj cronJob
		r.find(t, "CronJob", "blast-mesh", &cj)
		tpl = cj.Spec.JobTemplate.Spec.Template
	} else {
		if n := r.count("CronJob"); n != 0 {
			t.Fatalf("%s: the mesh is a one-off Job here, but %d CronJob(s) are rendered too", r.dir, n)
		}
		var j job
		r.find(t, "Job", "blast-mesh", &j)
		tpl = j.Spec.Template
	}
	return &tpl, containerNamed(t, r.dir+": mesh", tpl.Spec.Containers, "mesh")
}

func containerNamed(t *testing.T, where string, cs []container, name string) *container {
	t.Helper()
	if len(cs) != 1 || cs[0].Name != name {
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		t.Fatalf("%s: want one container %q, have %q", where, name, names)
	}
	return &cs[0]
}

// flagValue returns the value of --name in args (--name=V or --name V).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// expand replaces $(VAR) in s with the container's env, as the kubelet
// does for args.
func expand(c *container, s string) string {
	for _, e := range c.Env {
		s = strings.ReplaceAll(s, "$("+e.Name+")", e.Value)
	}
	return s
}

// containerPort resolves p, by name or by number and protocol, to the
// container port it means; ok is false if it means none.
func containerPort(c *container, p intOrString, protocol string) (name string, num int, proto string, ok bool) {
	for _, cp := range c.Ports {
		if (p.name != "" && cp.Name == p.name) || (p.name == "" && cp.ContainerPort == p.num && cmpOr(cp.Protocol, "TCP") == cmpOr(protocol, "TCP")) {
			return cp.Name, cp.ContainerPort, cmpOr(cp.Protocol, "TCP"), true
		}
	}
	return "", 0, "", false
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// effective returns the container's value of a security setting, or the
// pod's where the container sets none.
func effective[T any](c *container, pod *podSpec, get func(*securityContext) *T) *T {
	if c.SecurityContext != nil {
		if v := get(c.SecurityContext); v != nil {
			return v
		}
	}
	if pod.SecurityContext != nil {
		return get(pod.SecurityContext)
	}
	return nil
}

// checkRestricted fails unless the container meets what the base promises
// of every pod: non-root, no escalation, read-only root, every capability
// dropped, RuntimeDefault seccomp. caps are the capabilities it may add.
func checkRestricted(t *testing.T, where string, pod *podSpec, c *container, nonRoot bool, caps []string) {
	t.Helper()
	if nonRoot {
		if v := effective(c, pod, func(s *securityContext) *bool { return s.RunAsNonRoot }); v == nil || !*v {
			t.Errorf("%s: runAsNonRoot is not true: the pod may run as root", where)
		}
		if v := effective(c, pod, func(s *securityContext) *int64 { return s.RunAsUser }); v != nil && *v == 0 {
			t.Errorf("%s: runAsUser is 0 (root)", where)
		}
	}
	if v := effective(c, pod, func(s *securityContext) *bool { return s.Privileged }); v != nil && *v {
		t.Errorf("%s: privileged is true", where)
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s: container %s has no securityContext", where, c.Name)
		return
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation is not false", where)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not true", where)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("%s: capabilities do not drop ALL", where)
	} else if diff := cmp.Diff(sorted(caps), sorted(sc.Capabilities.Add)); diff != "" {
		t.Errorf("%s: added capabilities (-want +got):\n%s", where, diff)
	}
	if sp := effective(c, pod, func(s *securityContext) *struct {
		Type string `json:"type"`
	} {
		return s.SeccompProfile
	}); sp == nil || sp.Type != "RuntimeDefault" {
		t.Errorf("%s: seccompProfile is not RuntimeDefault", where)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	if len(s) == 0 {
		return nil
	}
	return s
}

// afxdpCaps are the capabilities the AF_XDP backend needs.
var afxdpCaps = []string{"NET_ADMIN", "NET_RAW", "BPF", "SYS_ADMIN", "IPC_LOCK"}

// TestPods checks the agents' and the mesh's pods: security, host network,
// the namespace's Pod Security level, the image and the backend.
func TestPods(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			ds, agent := r.agent(t)
			pod := &ds.Spec.Template.Spec
			where := r.dir + ": DaemonSet blast-agent"
			if r.v.afxdp {
				checkRestricted(t, where, pod, agent, false, afxdpCaps)
			} else {
				checkRestricted(t, where, pod, agent, true, nil)
			}
			if pod.HostNetwork != r.v.hostnet {
				t.Errorf("%s: hostNetwork is %v, want %v", where, pod.HostNetwork, r.v.hostnet)
			}
			wantDNS := ""
			if r.v.hostnet {
				wantDNS = "ClusterFirstWithHostNet" // else a host-network pod resolves with the node's resolv.conf, not the cluster's
			}
			if pod.DNSPolicy != wantDNS {
				t.Errorf("%s: dnsPolicy is %q, want %q", where, pod.DNSPolicy, wantDNS)
			}
			if !ds.Spec.Selector.matches(ds.Spec.Template.Metadata.Labels) || len(ds.Spec.Selector.MatchLabels) == 0 {
				t.Errorf("%s: the selector %v does not select its own pods %v", where, ds.Spec.Selector.MatchLabels, ds.Spec.Template.Metadata.Labels)
			}

			tpl, mesh := r.mesh(t)
			checkRestricted(t, r.dir+": mesh", &tpl.Spec, mesh, true, nil)
			if tpl.Spec.HostNetwork {
				t.Errorf("%s: the mesh runs on the host network", r.dir)
			}
			backend, ok := flagValue(mesh.Args, "--backend")
			switch {
			case r.v.afxdp && backend != "afxdp":
				t.Errorf("%s: the mesh's args %q do not ask for --backend afxdp", r.dir, mesh.Args)
			case !r.v.afxdp && ok:
				t.Errorf("%s: the mesh's args %q choose a backend (%s); the base leaves it to blast", r.dir, mesh.Args, backend)
			}
			if _, ok := flagValue(agent.Args, "--backend"); ok {
				t.Errorf("%s: the agent's args %q choose a backend; the mesh chooses it per test", r.dir, agent.Args)
			}

			for _, c := range []*container{agent, mesh} {
				if c.Image != "ghcr.io/blastnet/blast:latest" {
					t.Errorf("%s: container %s runs image %q, want ghcr.io/blastnet/blast:latest", r.dir, c.Name, c.Image)
				}
			}

			var ns struct {
				Metadata meta `json:"metadata"`
			}
			r.find(t, "Namespace", "blast", &ns)
			want := "restricted"
			if r.v.hostnet || r.v.afxdp {
				want = "privileged"
			}
			for _, mode := range []string{"enforce", "warn", "audit"} {
				if got := ns.Metadata.Labels["pod-security.kubernetes.io/"+mode]; got != want {
					t.Errorf("%s: namespace blast has Pod Security %s=%q, want %q", r.dir, mode, got, want)
				}
			}
			for _, o := range r.objects {
				if o.Kind != "Namespace" && o.Metadata.Namespace != "blast" {
					t.Errorf("%s: %s %s is in namespace %q, want blast", r.dir, o.Kind, o.Metadata.Name, o.Metadata.Namespace)
				}
			}
		})
	}
}

// TestAPIAccess checks that only the mesh reaches the Kubernetes API, with
// exactly get, list and watch on the EndpointSlices of its namespace.
func TestAPIAccess(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			var ro role
			r.find(t, "Role", "", &ro)
			want := []policyRule{{
				APIGroups: []string{"discovery.k8s.io"},
				Resources: []string{"endpointslices"},
				Verbs:     []string{"get", "list", "watch"},
			}}
			got := slices.Clone(ro.Rules)
			for i := range got {
				got[i].Verbs = sorted(got[i].Verbs)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: the Role's rules (-want +got):\n%s", r.dir, diff)
			}
			if n := r.count("ClusterRole") + r.count("ClusterRoleBinding"); n != 0 {
				t.Errorf("%s: %d cluster-wide RBAC object(s); the mesh needs only its namespace", r.dir, n)
			}

			var rb roleBinding
			r.find(t, "RoleBinding", "", &rb)
			var roleObj object
			for _, o := range r.objects {
				if o.Kind == "Role" {
					roleObj = o
				}
			}
			if roleObj.Metadata.Name != discover.MeshRole {
				t.Errorf("%s: the Role is %q; blast's 403 error names %q (discover.MeshRole)", r.dir, roleObj.Metadata.Name, discover.MeshRole)
			}
			if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != roleObj.Metadata.Name {
				t.Errorf("%s: the RoleBinding refers to %s %q, not to the Role %q", r.dir, rb.RoleRef.Kind, rb.RoleRef.Name, roleObj.Metadata.Name)
			}
			tpl, _ := r.mesh(t)
			meshSA := tpl.Spec.ServiceAccountName
			type subject struct{ Kind, Name, Namespace string }
			var subjects []subject
			for _, s := range rb.Subjects {
				subjects = append(subjects, subject{s.Kind, s.Name, s.Namespace})
			}
			if diff := cmp.Diff([]subject{{"ServiceAccount", meshSA, "blast"}}, subjects); diff != "" {
				t.Errorf("%s: the RoleBinding's subjects, want only the mesh's account (-want +got):\n%s", r.dir, diff)
			}

			ds, _ := r.agent(t)
			agentSA := ds.Spec.Template.Spec.ServiceAccountName
			if agentSA == "" || agentSA == "default" || agentSA == meshSA {
				t.Errorf("%s: the agents run as service account %q; want one of their own, not the mesh's %q", r.dir, agentSA, meshSA)
			}
			var sa serviceAccount
			r.find(t, "ServiceAccount", agentSA, &sa)
			if a := ds.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
				t.Errorf("%s: the agents' pods mount an API token (automountServiceAccountToken is not false)", r.dir)
			}
			if a := sa.AutomountServiceAccountToken; a == nil || *a {
				t.Errorf("%s: service account %s mounts its token (automountServiceAccountToken is not false)", r.dir, agentSA)
			}
			r.find(t, "ServiceAccount", meshSA, &sa)
		})
	}
}

// TestNetworkPolicy checks that only the mesh's pods may reach the agents'
// control port, and the agents one another's data port, TCP and UDP.
func TestNetworkPolicy(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			var np networkPolicy
			r.find(t, "NetworkPolicy", "", &np)
			ds, agent := r.agent(t)
			tpl, _ := r.mesh(t)
			agentLabels, meshLabels := ds.Spec.Template.Metadata.Labels, tpl.Metadata.Labels

			if !np.Spec.PodSelector.matches(agentLabels) || len(np.Spec.PodSelector.MatchLabels) == 0 {
				t.Fatalf("%s: the NetworkPolicy's podSelector %v does not select the agents %v", r.dir, np.Spec.PodSelector.MatchLabels, agentLabels)
			}
			if !slices.Contains(np.Spec.PolicyTypes, "Ingress") {
				t.Fatalf("%s: the NetworkPolicy's policyTypes %v leave ingress open", r.dir, np.Spec.PolicyTypes)
			}
			// Who is admitted to which container port: "mesh", "agent" or
			// "other" (any other source).
			admitted := map[string][]string{}
			for i, rule := range np.Spec.Ingress {
				if len(rule.Ports) == 0 {
					t.Errorf("%s: ingress rule %d admits every port", r.dir, i)
				}
				if len(rule.From) == 0 {
					t.Errorf("%s: ingress rule %d admits every source", r.dir, i)
				}
				var from []string
				for _, f := range rule.From {
					switch {
					case f.PodSelector == nil || f.NamespaceSelector != nil || f.IPBlock != nil:
						from = append(from, "other")
					case f.PodSelector.matches(meshLabels) && !f.PodSelector.matches(agentLabels):
						from = append(from, "mesh")
					case f.PodSelector.matches(agentLabels) && !f.PodSelector.matches(meshLabels):
						from = append(from, "agent")
					default:
						from = append(from, "other")
					}
				}
				for _, p := range rule.Ports {
					if p.Port == nil || p.EndPort != nil {
						t.Errorf("%s: ingress rule %d admits a range of ports", r.dir, i)
						continue
					}
					name, _, proto, ok := containerPort(agent, *p.Port, p.Protocol)
					if !ok || proto != cmpOr(p.Protocol, "TCP") {
						t.Errorf("%s: ingress rule %d admits port %s/%s, which is no port of the agent", r.dir, i, p.Port, cmpOr(p.Protocol, "TCP"))
						continue
					}
					admitted[name] = append(admitted[name], from...)
				}
			}
			for name := range admitted {
				admitted[name] = sorted(slices.Compact(sorted(admitted[name])))
			}
			want := map[string][]string{
				"control":  {"mesh"},
				"data":     {"agent"},
				"data-udp": {"agent"},
			}
			if diff := cmp.Diff(want, admitted); diff != "" {
				t.Errorf("%s: who the NetworkPolicy admits to which agent port (-want +got):\n%s", r.dir, diff)
			}
		})
	}
}

// TestPorts checks that the agent's ports agree everywhere: its args, its
// container ports, its readiness probe and the Service, which the mesh
// finds the agents through.
func TestPorts(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			checkPorts(t, r, dataPort, controlPort)
		})
	}
}

// checkPorts fails unless the agents listen on data and control and every
// object says so.
func checkPorts(t *testing.T, r rendering, data, control int) {
	t.Helper()
	ds, agent := r.agent(t)
	type port struct {
		Name     string
		Port     int
		Protocol string
	}
	var got []port
	for _, p := range agent.Ports {
		got = append(got, port{p.Name, p.ContainerPort, cmpOr(p.Protocol, "TCP")})
	}
	want := []port{{"data", data, "TCP"}, {"data-udp", data, "UDP"}, {"control", control, "TCP"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the agent's container ports (-want +got):\n%s", r.dir, diff)
	}

	for flag, want := range map[string]int{"--port": data, "--control-port": control} {
		v, ok := flagValue(agent.Args, flag)
		if !ok {
			t.Errorf("%s: the agent's args %q have no %s", r.dir, agent.Args, flag)
			continue
		}
		if got := expand(agent, v); got != strconv.Itoa(want) {
			t.Errorf("%s: the agent's %s is %q (%q expanded), want %d", r.dir, flag, v, got, want)
		}
	}

	if agent.ReadinessProbe == nil || agent.ReadinessProbe.TCPSocket == nil {
		t.Errorf("%s: the agent has no tcpSocket readiness probe", r.dir)
	} else if name, num, proto, ok := containerPort(agent, agent.ReadinessProbe.TCPSocket.Port, "TCP"); !ok || name != "data" || num != data || proto != "TCP" {
		t.Errorf("%s: the readiness probe checks port %s, not the data port %d/TCP", r.dir, agent.ReadinessProbe.TCPSocket.Port, data)
	}

	var svc service
	r.find(t, "Service", "blast", &svc)
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("%s: Service blast has clusterIP %q; want None (headless: one endpoint per agent)", r.dir, svc.Spec.ClusterIP)
	}
	if svc.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: Service blast publishes agents that are not ready", r.dir)
	}
	if len(svc.Spec.Selector) == 0 || !(labelSelector{MatchLabels: svc.Spec.Selector}).matches(ds.Spec.Template.Metadata.Labels) {
		t.Errorf("%s: Service blast selects %v, not the agents %v", r.dir, svc.Spec.Selector, ds.Spec.Template.Metadata.Labels)
	}
	var names []string
	for _, sp := range svc.Spec.Ports {
		names = append(names, sp.Name)
		name, num, proto, ok := containerPort(agent, sp.TargetPort, sp.Protocol)
		switch {
		case !ok:
			t.Errorf("%s: Service port %s targets %s, no port of the agent", r.dir, sp.Name, sp.TargetPort)
		case name != sp.Name || proto != cmpOr(sp.Protocol, "TCP") || num != sp.Port:
			t.Errorf("%s: Service port %s (%d/%s) targets the agent's port %s (%d/%s); want the same name, number and protocol", r.dir, sp.Name, sp.Port, cmpOr(sp.Protocol, "TCP"), name, num, proto)
		}
	}
	if diff := cmp.Diff([]string{"data", "data-udp", "control"}, names); diff != "" {
		t.Errorf("%s: Service blast's port names (-want +got):\n%s", r.dir, diff)
	}
}

// TestMeshFindsAgents checks that the mesh's --peers names the Service and
// that agents and mesh read the token from the same key of the same Secret.
func TestMeshFindsAgents(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			ds, agent := r.agent(t)
			tpl, mesh := r.mesh(t)
			peers, _ := flagValue(mesh.Args, "--peers")
			var svc service
			svcObj := r.find(t, "Service", "", &svc)
			if peers != "k8s:"+svcObj.Metadata.Name {
				t.Errorf("%s: the mesh's --peers is %q; want k8s:%s, the agents' Service", r.dir, peers, svcObj.Metadata.Name)
			}
			agentSecret, agentKey := tokenSource(t, r.dir+": agent", &ds.Spec.Template.Spec, agent)
			meshSecret, meshKey := tokenSource(t, r.dir+": mesh", &tpl.Spec, mesh)
			if agentSecret != meshSecret || agentKey != meshKey {
				t.Errorf("%s: the agents read their token from Secret %s key %s, the mesh from Secret %s key %s", r.dir, agentSecret, agentKey, meshSecret, meshKey)
			}
			var s secret
			r.find(t, "Secret", agentSecret, &s)
			if s.Data[agentKey] == "" {
				t.Errorf("%s: Secret %s has no key %s", r.dir, agentSecret, agentKey)
			}
		})
	}
}

// tokenSource follows the container's --token-file to the Secret and key
// mounted there.
func tokenSource(t *testing.T, where string, pod *podSpec, c *container) (secretName, key string) {
	t.Helper()
	return fileSource(t, where, pod, c, "--token-file")
}

// fileSource follows the file of the container's flag to the Secret and
// key mounted there.
func fileSource(t *testing.T, where string, pod *podSpec, c *container, flag string) (secretName, key string) {
	t.Helper()
	file, ok := flagValue(c.Args, flag)
	if !ok {
		t.Fatalf("%s: args %q have no %s", where, c.Args, flag)
	}
	dir, base := path.Split(file)
	dir = path.Clean(dir)
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != dir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return v.Secret.SecretName, base
			}
			for _, it := range v.Secret.Items {
				if it.Path == base {
					return v.Secret.SecretName, it.Key
				}
			}
		}
	}
	t.Fatalf("%s: %s %s is in no Secret mounted at %s", where, flag, file, dir)
	return "", ""
}

// TestTLSVariant: with TLS, the agents serve their control endpoint with
// the certificate and key of the Secret blast-agent-tls (tls.crt,
// tls.key, as cert-manager writes them), and the mesh checks them against
// its ca.crt under the one name the certificate carries; without, none of
// it.
func TestTLSVariant(t *testing.T) {
	for _, r := range renderAll(t) {
		t.Run(r.dir, func(t *testing.T) {
			ds, agent := r.agent(t)
			tpl, mesh := r.mesh(t)
			if !r.v.tls {
				for _, c := range []*container{agent, mesh} {
					for _, f := range []string{"--tls-cert", "--tls-key", "--tls-ca", "--tls-server-name"} {
						if _, ok := flagValue(c.Args, f); ok {
							t.Errorf("%s: %s has %s without TLS", r.dir, c.Name, f)
						}
					}
				}
				return
			}
			for _, f := range []struct {
				pod  *podSpec
				c    *container
				flag string
				key  string
			}{
				{&ds.Spec.Template.Spec, agent, "--tls-cert", "tls.crt"},
				{&ds.Spec.Template.Spec, agent, "--tls-key", "tls.key"},
				{&tpl.Spec, mesh, "--tls-ca", "ca.crt"},
			} {
				secret, key := fileSource(t, r.dir+": "+f.c.Name, f.pod, f.c, f.flag)
				if secret != "blast-agent-tls" || key != f.key {
					t.Errorf("%s: %s's %s is key %s of Secret %s, want %s of blast-agent-tls", r.dir, f.c.Name, f.flag, key, secret, f.key)
				}
			}
			if name, _ := flagValue(mesh.Args, "--tls-server-name"); name != "blast-agent.blast.svc" {
				t.Errorf("%s: the mesh's --tls-server-name is %q, want blast-agent.blast.svc", r.dir, name)
			}
		})
	}
}

// TestCronJobMatchesJob holds the scheduled mesh equal to the one-off one:
// the CronJob's job spec is the base Job's.
func TestCronJobMatchesJob(t *testing.T) {
	var base, cron rendering
	for _, r := range renderAll(t) {
		switch r.dir {
		case "base":
			base = r
		case "overlays/cronjob":
			cron = r
		}
	}
	var j struct {
		Spec map[string]any `json:"spec"`
	}
	base.find(t, "Job", "blast-mesh", &j)
	var cj struct {
		Spec struct {
			JobTemplate struct {
				Spec map[string]any `json:"spec"`
			} `json:"jobTemplate"`
		} `json:"spec"`
	}
	cron.find(t, "CronJob", "blast-mesh", &cj)
	if diff := cmp.Diff(j.Spec, cj.Spec.JobTemplate.Spec); diff != "" {
		t.Errorf("the CronJob's job spec differs from the base Job's (-job +cronjob):\n%s", diff)
	}
}

// TestHostnetPortChange changes the ports in overlays/hostnet/ports.yaml,
// the one place the README says to, and checks that the change reaches
// every place a port appears, and that the old numbers are gone.
func TestHostnetPortChange(t *testing.T) {
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.Join("/", filepath.ToSlash(p)), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	ports := "/" + root + "/overlays/hostnet/ports.yaml"
	b, err := mem.ReadFile(ports)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.NewReplacer(`data: "5201"`, `data: "6301"`, `control: "5202"`, `control: "6302"`).Replace(string(b))
	if strings.Count(changed, "630") != 2 {
		t.Fatalf("%s does not set data: \"5201\" and control: \"5202\" as this test expects:\n%s", ports, b)
	}
	if err := mem.WriteFile(ports, []byte(changed)); err != nil {
		t.Fatal(err)
	}
	objs, y, err := render(mem, "/"+root+"/overlays/hostnet")
	if err != nil {
		t.Fatal(err)
	}
	r := rendering{dir: "overlays/hostnet with ports 6301 and 6302", v: variants["overlays/hostnet"], objects: objs, yaml: y}
	checkPorts(t, r, 6301, 6302)
	for _, old := range []string{"5201", "5202"} {
		if strings.Contains(y, old) {
			t.Errorf("the old port %s is still in the output:\n%s", old, y)
		}
	}
	for _, o := range objs {
		if o.Kind == "ConfigMap" {
			t.Errorf("the ports ConfigMap %s is in the output; it is local to kustomize", o.Metadata.Name)
		}
	}
	v := newValidator(t)
	for _, o := range objs {
		if res := v.ValidateResource(resource.Resource{Path: o.Kind, Bytes: o.yaml}); res.Status != validator.Valid {
			t.Errorf("%s %s with the changed ports: %s", o.Kind, o.Metadata.Name, describe(res))
		}
	}
}

// TestTokenPlaceholder keeps a real token out of the repository: the
// committed token file holds the placeholder the README tells users to
// replace.
func TestTokenPlaceholder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "base", "token.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "REPLACE-ME") {
		t.Errorf("%s holds %q, not the REPLACE-ME placeholder: put real tokens in an overlay outside git (README.md, \"The token\")", filepath.Join(root, "base", "token.txt"), b)
	}
}
