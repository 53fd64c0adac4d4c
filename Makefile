# blast — build, test, demo. `make help` lists the targets.
GO      ?= go
export PATH := $(PATH):/usr/local/go/bin

# Debian packages the tests run against: command -> package.
TEST_TOOLS := ip:iproute2 tc:iproute2 socat:socat iperf3:iperf3 ethtool:ethtool sockperf:sockperf rsvg-convert:librsvg2-bin iptables:iptables

.PHONY: help build install man rules test test-stress check-timing vet deps demo bench bench-quick clean fuzz image test-image test-k8s deps-k8s kube-apiserver

BENCH_FLAGS ?=

# Packages that only tests use: held to the tests' rules (no sleeping).
TEST_HELPERS := engine/enginetest internal/k8stest internal/testkit internal/blasttest netlab/labtest internal/verify/verifytest internal/golden

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

build: ## build bin/blast and the bin/ttcp link to it
	$(GO) build -buildvcs=auto -o bin/blast ./cmd/blast
	ln -sf blast bin/ttcp

# The image: make image; docker load -i bin/blast-image.tar (README.md, "The image").
IMAGE_TAG  ?= ghcr.io/blastnet/blast:latest
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)

image: ## build the container image without a daemon: the static binary on scratch, as an OCI layout bin/blast-image.oci and a docker/podman load tarball bin/blast-image.tar (IMAGE_TAG=, IMAGE_ARCH=); the same commit gives the same digest
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -buildvcs=auto -trimpath -ldflags '-s -w' -o bin/image/blast ./cmd/blast
	cd deploy/image && SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct)} \
	  $(GO) run . -binary ../../bin/image/blast -oci ../../bin/blast-image.oci -tar ../../bin/blast-image.tar \
	  -tag '$(IMAGE_TAG)' -version "$$(git describe --tags --always --dirty)"

test-image: image ## build the image and smoke-test it (root): vet its module, then run its entrypoint from the layout as its config says, in namespaces of its own (deploy/image)
	cd deploy/image && $(GO) mod tidy -diff && $(GO) vet ./... && \
	  BLAST_IMAGE_BINARY=$(CURDIR)/bin/image/blast $(GO) test -count=1 -timeout 10m ./...

PREFIX  ?= /usr/local
DESTDIR ?=
UNITDIR ?= /lib/systemd/system
MANDIR  ?= $(PREFIX)/share/man/man1
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d

install: build man ## install blast, its ttcp link, the man pages, the bash/zsh/fish completions and the blast-server and blast-agent systemd units (PREFIX=/usr/local, DESTDIR=)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR) \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 bin/blast $(DESTDIR)$(PREFIX)/bin/blast
	ln -sf blast $(DESTDIR)$(PREFIX)/bin/ttcp
	install -m 0644 man/*.1 $(DESTDIR)$(MANDIR)
	ln -sf blast-ttcp.1 $(DESTDIR)$(MANDIR)/ttcp.1
	bin/blast completion bash > $(DESTDIR)$(BASHCOMPDIR)/blast
	bin/blast completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_blast
	bin/blast completion fish > $(DESTDIR)$(FISHCOMPDIR)/blast.fish
	chmod 0644 $(DESTDIR)$(BASHCOMPDIR)/blast $(DESTDIR)$(ZSHCOMPDIR)/_blast $(DESTDIR)$(FISHCOMPDIR)/blast.fish
	for u in blast-server blast-agent; do \
	  sed 's|/usr/local/bin/blast|$(PREFIX)/bin/blast|g' dist/$$u.service > $(DESTDIR)$(UNITDIR)/$$u.service && \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.service || exit 1; \
	done
	@echo "installed; to run the server: systemctl daemon-reload && systemctl enable --now blast-server (or blast-agent, with /etc/blast/token)"

man: build ## write the man pages (blast.1, blast-COMMAND.1) into man/, from the commands' help and flag definitions; dated by the last commit
	rm -rf man
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null)} ./bin/blast man man

rules: ## rewrite README.md's rule table from finding's registry (finding/registry.go); go test ./finding fails while they differ
	$(GO) test ./finding -run TestREADMETable -count=1 -update

deps: ## install the Debian packages the tests need (as root, when missing)
	@missing=""; for tp in $(TEST_TOOLS); do \
	  command -v $${tp%%:*} >/dev/null 2>&1 || missing="$$missing $${tp#*:}"; \
	done; \
	[ -f /usr/share/bash-completion/bash_completion ] || missing="$$missing bash-completion"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing:$$missing (run make test as root to install them; their tests will fail without them)"; \
	  fi; \
	fi
	$(GO) mod download
	cd deploy && $(GO) mod download

vet: ## go.mod tidy (blast's and deploy's), gofmt, go vet for Linux, for another OS and with the timing checks; tests that sleep or skip on a slow host
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit the result"; exit 1; }
	@cd deploy && $(GO) mod tidy -diff || { echo "deploy/go.mod or deploy/go.sum is not tidy: run 'go mod tidy' in deploy/ and commit the result"; exit 1; }
	@f=$$("$$($(GO) env GOROOT)/bin/gofmt" -l $$(git ls-files '*.go')) && test -z "$$f" || { echo "not gofmt'ed (run gofmt -w on them): $$f"; exit 1; }
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	$(GO) vet -tags timing ./...
	$(GO) vet -tags k8s ./internal/k8stest/
	cd deploy && $(GO) vet ./... && $(GO) vet -tags k8s ./...
	@! git grep -n 'time\.Sleep' -- '*_test.go' $(TEST_HELPERS) || { echo "a test sleeps: wait for the event (testkit.WaitFor) or use the fake clock (internal/clock)"; exit 1; }
	@! git grep -n -i -E '\.Skip[f]?\(.*\b(slow|busy|stall|stalls|stalled|loaded|too late|too often|to judge|host is)\b' -- '*_test.go' || { echo "a test skips on a slow host: it must pass there (behaviour), or be a timing check (make check-timing)"; exit 1; }

test: deps vet ## vet and run every test, packages in parallel (the lab tests need root; fuzz targets run their seed corpus), then the manifests' (deploy/, a module of its own)
	@bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
	$(GO) build -o "$$bin/blast" ./cmd/blast && ln -s blast "$$bin/ttcp" || exit 1; \
	st=0; BLAST_TEST_BIN="$$bin/blast" $(GO) test -count=1 -timeout 10m ./... || st=1; \
	(cd deploy && BLAST_TEST_BIN="$$bin/blast" $(GO) test -count=1 -timeout 10m ./...) || st=1; \
	exit $$st

# The real API server of make test-k8s: kube-apiserver of this release,
# built from the Go module proxy by the module in internal/k8stest/apiserver
# (k8s.io/kubernetes and its staging modules pinned there, not in blast's
# go.mod), once: the binary is kept in K8S_APISERVER.
K8S_VERSION   := v1.37.2
K8S_APISERVER ?= $(HOME)/.cache/blast/kube-apiserver-$(K8S_VERSION)
K8S_VERSION_PKG := k8s.io/component-base/version
K8S_LDFLAGS   := -s -w -X $(K8S_VERSION_PKG).gitVersion=$(K8S_VERSION) \
  -X $(K8S_VERSION_PKG).gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION:v%=%))) \
  -X $(K8S_VERSION_PKG).gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION:v%=%))) \
  -X $(K8S_VERSION_PKG).gitTreeState=clean -X $(K8S_VERSION_PKG).buildDate=1970-01-01T00:00:00Z

deps-k8s: ## install Debian's etcd (etcd-server), the API server's storage in make test-k8s (as root, when missing)
	@command -v etcd >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing: etcd-server"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; \
	  else \
	    echo "missing: etcd-server (run make test-k8s as root to install it)"; exit 1; \
	  fi; }

kube-apiserver: ## build kube-apiserver (K8S_VERSION, v1.37.2) into K8S_APISERVER (~/.cache/blast), when it is missing (cold: about 800 CPU-seconds, 7 minutes on 2 idle CPUs)
	@if [ -x "$(K8S_APISERVER)" ]; then echo "kube-apiserver $(K8S_VERSION): $(K8S_APISERVER)"; else \
	  echo "building kube-apiserver $(K8S_VERSION) into $(K8S_APISERVER)"; \
	  mkdir -p "$(dir $(K8S_APISERVER))" && \
	  cd internal/k8stest/apiserver && \
	  GOWORK=off $(GO) build -o "$(K8S_APISERVER).tmp" -ldflags '$(K8S_LDFLAGS)' k8s.io/kubernetes/cmd/kube-apiserver && \
	  mv "$(K8S_APISERVER).tmp" "$(K8S_APISERVER)"; \
	fi

test-k8s: deps-k8s kube-apiserver ## blast's Kubernetes discovery and the manifests against a real kube-apiserver and etcd on 127.0.0.1 (root for etcd's install; builds the API server once)
	cd deploy && BLAST_KUBE_APISERVER="$(K8S_APISERVER)" $(GO) test -tags k8s -count=1 -timeout 15m -v -run 'TestAPIServer' .

ROUNDS ?= 5

test-stress: deps ## run the suite ROUNDS times (default 5, no fuzzing) with every CPU kept busy; lists each test that failed once, with its output
	$(GO) run ./internal/teststress -rounds $(ROUNDS)

check-timing: deps ## the timing properties (pacing, late wakeups, latency vs sockperf, UDP loss vs iperf3, ...), each judged on a median beside the host's load; exit 3: host too busy to judge
	GO=$(GO) scripts/check-timing.sh

FUZZTIME ?= 1m

fuzz: ## run every fuzz target for FUZZTIME each (make fuzz FUZZTIME=60s; default 1m); an input that fails lands in testdata/fuzz
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

demo: build ## build blast and run its demo on a lab it builds (root) or loopback
	./bin/blast demo

bench: ## blast vs iperf3 (Debian's; a modern one with BENCH_FLAGS=--iperf3=PATH), sockperf, trafgen on a netns lab (root, <15 min); writes bench/results and bench/README.md; then check-timing into bench/results/check-timing.txt
	$(GO) run ./bench/cmd/blastbench $(BENCH_FLAGS)
	GO=$(GO) scripts/check-timing.sh > bench/results/check-timing.txt; st=$$?; cat bench/results/check-timing.txt; exit $$st

bench-quick: ## the short benchmark suite (root, about 2 min): 3 rounds of 1 s, fewer workloads
	$(GO) run ./bench/cmd/blastbench -quick $(BENCH_FLAGS)

clean: ## remove what build and man made
	rm -rf bin man
