// Package deploy holds what runs blast on Kubernetes: the kustomizations
// under kubernetes/ (a base of agents and a mesh Job, and the cronjob,
// hostnet and afxdp variants) and the image's Dockerfile at the root of
// the repository. It has no code: its tests render every kustomization in
// process, validate each object strictly and offline against the
// Kubernetes JSON schemas committed under schemas/, and check what the
// deployment promises (non-root agents, the mesh's narrow API access and
// network reach, ports and token that agree across objects). With the k8s
// build tag (make test-k8s) they also run against a real kube-apiserver
// (internal/k8stest): every object dry-run there, and blast's discovery
// against the base's objects.
//
// It is a Go module of its own (go.mod here, blast from this checkout by a
// replace), so that kustomize, kubeconform and what they need stay out of
// blast's go.mod; make test runs its tests (cd deploy && go test ./...).
package deploy
