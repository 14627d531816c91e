# cnibench: make build | make test | make image
# Everything works offline once Go modules are in the module cache.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE   ?= ghcr.io/cnibench/cnibench:$(VERSION)
GO      ?= go

.PHONY: build test image

# Static binary with version and commit stamped in (scripts/build.sh).
build:
	./scripts/build.sh

# Every test; lab and containerd tests need root and skip otherwise.
test:
	$(GO) test -p 1 -count=1 ./...

# The agent image as a tarball (OCI layout + docker-save manifest.json):
# the static binary on an empty base, no Docker engine or registry needed.
#   ctr -n k8s.io image import bin/cnibench-image.tar   (on each node)
#   docker load -i bin/cnibench-image.tar
#   kind load image-archive bin/cnibench-image.tar
#   crane push bin/cnibench-image.tar $(IMAGE)
image: build
	./bin/cnibench k8s image --binary bin/cnibench --tag $(IMAGE) --out bin/cnibench-image.tar
