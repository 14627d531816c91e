package k8starget

import (
	"archive/tar"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// buildStatic compiles a tiny static program (an empty image has no
// loader: only static binaries run there).
func buildStatic(t *testing.T, cgo bool) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nimport \"os/user\"\nfunc main() { user.Current() }\n"), 0o644)
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if cgo {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		if cgo {
			t.Skipf("no cgo toolchain: %s", out)
		}
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// The tarball holds one image with the tag, OCI media types, the binary
// at /cnibench (executable), running as nobody, and the same digest for
// the same binary.
func TestBuildImage(t *testing.T) {
	bin := buildStatic(t, false)
	dir := t.TempDir()
	out := filepath.Join(dir, "img.tar")
	info, err := BuildImage(ImageOptions{Binary: bin, Ref: "ghcr.io/cnibench/cnibench:test", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if info.Architecture != runtime.GOARCH || !strings.HasPrefix(info.Digest, "sha256:") || info.Bytes == 0 {
		t.Errorf("info %+v", info)
	}
	// docker save layout: manifest.json names the tag.
	f, _ := os.Open(out)
	tr := tar.NewReader(f)
	var manifest []struct{ RepoTags []string }
	var index v1.IndexManifest
	blobs := map[string]bool{}
	layout := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Name == "manifest.json":
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				t.Fatal(err)
			}
		case h.Name == "index.json":
			if err := json.NewDecoder(tr).Decode(&index); err != nil {
				t.Fatal(err)
			}
		case h.Name == "oci-layout":
			layout = true
		case strings.HasPrefix(h.Name, "blobs/sha256/") && h.Typeflag == tar.TypeReg:
			blobs[h.Name] = true
		}
	}
	f.Close()
	if !layout || len(index.Manifests) != 1 || len(blobs) != 3 {
		t.Fatalf("not an OCI layout: oci-layout %v, %d manifests, blobs %v", layout, len(index.Manifests), blobs)
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != "ghcr.io/cnibench/cnibench:test" {
		t.Fatalf("manifest.json %+v", manifest)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The OCI side: index.json names the OCI manifest by the digest
	// BuildImage reported, with the names containerd uses.
	if index.Manifests[0].Digest.String() != info.Digest || index.Manifests[0].MediaType != types.OCIManifestSchema1 ||
		index.Manifests[0].Annotations["io.containerd.image.name"] != "ghcr.io/cnibench/cnibench:test" || !blobs["blobs/sha256/"+index.Manifests[0].Digest.Hex] {
		t.Errorf("index.json %+v, blobs %v, digest %s", index, blobs, info.Digest)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || cf.Config.User != "65534:65534" ||
		strings.Join(cf.Config.Entrypoint, " ") != "/cnibench" || strings.Join(cf.Config.Cmd, " ") != "agent --control tcp::5200" {
		t.Errorf("config %+v", cf)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, _ := layers[0].Uncompressed()
	lt := tar.NewReader(rc)
	h, err := lt.Next()
	if err != nil || h.Name != "cnibench" || h.Mode&0o111 == 0 {
		t.Fatalf("layer entry %+v %v", h, err)
	}
	want, _ := os.ReadFile(bin)
	got, _ := io.ReadAll(lt)
	rc.Close()
	if string(got) != string(want) {
		t.Error("the layer's binary differs from the input")
	}
	again, err := BuildImage(ImageOptions{Binary: bin, Ref: "ghcr.io/cnibench/cnibench:test", Out: filepath.Join(dir, "again.tar")})
	if err != nil || again.Digest != info.Digest {
		t.Errorf("rebuild digest %s, first %s (%v): not reproducible", again.Digest, info.Digest, err)
	}
}

func TestBuildImageRefusesDynamicBinary(t *testing.T) {
	bin := buildStatic(t, true)
	_, err := BuildImage(ImageOptions{Binary: bin, Ref: "x:y", Out: filepath.Join(t.TempDir(), "x.tar")})
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("dynamic binary: %v", err)
	}
	_, err = BuildImage(ImageOptions{Binary: "image_test.go", Ref: "x:y", Out: filepath.Join(t.TempDir(), "x.tar")})
	if err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("not a binary: %v", err)
	}
}
