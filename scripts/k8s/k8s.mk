# Single-node Kubernetes for tests (docs/kubernetes.md, "A real single-node Kubernetes for tests").
# Included by the top-level Makefile:  include scripts/k8s/k8s.mk

ASTER_K8S_SCRIPTS := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

.PHONY: k8s-build k8s-up k8s-down k8s-check

## k8s-build: build Kubernetes v1.33.13, etcd and the pause image from the Go module proxy (cached)
k8s-build:
	bash $(ASTER_K8S_SCRIPTS)/build.sh

## k8s-up: start the test cluster (idempotent); kubeconfig /var/lib/aster-k8s/kubeconfig
k8s-up:
	bash $(ASTER_K8S_SCRIPTS)/up.sh

## k8s-down: stop the test cluster and restore the host (idempotent)
k8s-down:
	bash $(ASTER_K8S_SCRIPTS)/down.sh

## k8s-check: check the running cluster (OOMKilled, logs, attach, exec)
k8s-check:
	bash $(ASTER_K8S_SCRIPTS)/check.sh

.PHONY: k8s-ci-start k8s-ci-test

## k8s-ci-start: CI, early in `make test`: build the minimal test cluster in the background (returns at once)
k8s-ci-start:
	bash $(ASTER_K8S_SCRIPTS)/ci.sh start-build

## k8s-ci-test: CI, late in `make test`: wait for that build, start the cluster, run the Kubernetes tests, tear it down
k8s-ci-test:
	bash $(ASTER_K8S_SCRIPTS)/ci.sh test
