package k8starget

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	enginekinds "github.com/cnibench/cnibench/engine/kinds"
)

// ImageOptions describe the agent image.
type ImageOptions struct {
	Binary string `json:"binary"` // a static linux cnibench binary (CGO_ENABLED=0)
	Ref    string `json:"ref"`    // tag written into the tarball, e.g. ghcr.io/cnibench/cnibench:v0.1.0
	Out    string `json:"out"`    // the tarball to write
	// Created is the image's creation time; zero means the Unix epoch, so
	// the same binary always gives the same image digest.
	Created time.Time `json:"created"`
}

// ImageInfo describes a written image.
type ImageInfo struct {
	Ref          string `json:"ref"`
	Digest       string `json:"digest"` // manifest digest
	Architecture string `json:"architecture"`
	Bytes        int64  `json:"bytes"` // tarball size
}

// BuildImage writes the agent image as a tarball, offline: one layer with
// the binary at /cnibench on an empty base, OCI media types, running as
// nobody. The tarball is in `docker save` layout (manifest.json with the
// tag), which `ctr image import`, `docker load`, `podman load`, `kind load
// image-archive` and `crane push` all read.
func BuildImage(o ImageOptions) (*ImageInfo, error) {
	arch, err := staticLinuxBinary(o.Binary)
	if err != nil {
		return nil, err
	}
	tag, err := name.NewTag(o.Ref, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("image tag %q: %v", o.Ref, err)
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	created := o.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	img, err := agentImage(bin, arch, created)
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	size, err := writeRenamed(o.Out, func(w io.Writer) error {
		if err := writeArchive(w, tag, img, created); err != nil {
			return fmt.Errorf("write image tarball: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ImageInfo{Ref: tag.String(), Digest: digest.String(), Architecture: arch, Bytes: size}, nil
}

// agentImage is the image: bin as its one layer on an empty base, the
// agent's entrypoint, ports and user, OCI media types.
func agentImage(bin []byte, arch string, created time.Time) (v1.Image, error) {
	layerTar, err := binaryLayer(bin, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = arch, "linux", v1.Time{Time: created.UTC()}
	cf.Config = v1.Config{
		Entrypoint:   []string{BinaryPath},
		Cmd:          []string{"agent", "--control", "tcp::" + strconv.Itoa(ControlPort)},
		User:         "65534:65534",
		ExposedPorts: exposedPorts(),
		Labels: map[string]string{
			"org.opencontainers.image.title":  "cnibench",
			"org.opencontainers.image.source": "https://github.com/cnibench/cnibench",
		},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

// writeRenamed writes out through write into a file beside it, renamed
// once complete (mode 0644), so a failed build never leaves a truncated
// file under the real name. It returns the file's size.
func writeRenamed(out string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".cnibench-image-*.tar")
	if err != nil {
		return 0, fmt.Errorf("image tarball: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return 0, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// archiveBlob is a content-addressed file of the image archive.
type archiveBlob struct {
	digest v1.Hash
	data   []byte
}

// writeArchive writes img as an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) plus a docker-save manifest.json over the same blobs,
// as `docker save` does since Docker 25: OCI readers (ctr import, skopeo)
// use index.json and keep the OCI manifest and its digest; docker load
// and crane use manifest.json.
func writeArchive(w io.Writer, tag name.Tag, img v1.Image, mtime time.Time) error {
	blobs, err := imageBlobs(img)
	if err != nil {
		return err
	}
	manifest, config, layers := blobs[0], blobs[1], blobs[2:]
	var layerPaths []string
	for _, l := range layers {
		layerPaths = append(layerPaths, "blobs/sha256/"+l.digest.Hex)
	}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: types.OCIManifestSchema1, Digest: manifest.digest, Size: int64(len(manifest.data)),
		Annotations: map[string]string{
			"io.containerd.image.name":          tag.Name(),
			"org.opencontainers.image.ref.name": tag.TagStr(),
		},
	}}}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return err
	}
	dockerJSON, err := json.Marshal([]tarball.Descriptor{{
		Config: "blobs/sha256/" + config.digest.Hex, RepoTags: []string{tag.Name()}, Layers: layerPaths,
	}})
	if err != nil {
		return err
	}
	return writeTar(w, mtime, blobs, []archiveFile{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", indexJSON}, {"manifest.json", dockerJSON}})
}

// imageBlobs are img's manifest, config and layers (compressed), in that
// order.
func imageBlobs(img v1.Image) ([]archiveBlob, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	mdigest, _ := img.Digest()
	cdigest, _ := img.ConfigName()
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	blobs := []archiveBlob{{mdigest, manifest}, {cdigest, config}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, archiveBlob{d, data})
	}
	return blobs, nil
}

// archiveFile is a named file of the image archive.
type archiveFile struct {
	name string
	data []byte
}

// writeTar writes the archive's entries in file order: the blobs
// directories, the blobs, then files.
func writeTar(w io.Writer, mtime time.Time, blobs []archiveBlob, files []archiveFile) error {
	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, ModTime: mtime, Typeflag: tar.TypeDir}); err != nil {
			return err
		}
	}
	for _, b := range blobs {
		if err := put("blobs/sha256/"+b.digest.Hex, b.data); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := put(f.name, f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// staticLinuxBinary checks that path is a statically linked Linux ELF (an
// empty base image has no dynamic loader) and returns its GOARCH.
func staticLinuxBinary(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("agent binary %s: not an ELF executable: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("agent binary %s is dynamically linked: build it with CGO_ENABLED=0 (make build)", path)
		}
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return "", fmt.Errorf("agent binary %s is not a Linux binary (%s)", path, f.OSABI)
	}
	arch, ok := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_386: "386",
		elf.EM_ARM: "arm", elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x", elf.EM_RISCV: "riscv64"}[f.Machine]
	if !ok {
		return "", fmt.Errorf("agent binary %s: unsupported machine %s", path, f.Machine)
	}
	return arch, nil
}

// binaryLayer is an uncompressed tar holding the binary at BinaryPath.
func binaryLayer(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: BinaryPath[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// exposedPorts are the image's EXPOSE: the control port and the engines'
// (deploy/Dockerfile says the same; a test checks it).
func exposedPorts() map[string]struct{} {
	ports := map[string]struct{}{fmt.Sprintf("%d/tcp", ControlPort): {}}
	for _, p := range enginekinds.ExposedPorts() {
		ports[p.String()] = struct{}{}
	}
	return ports
}
