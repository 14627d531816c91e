package k8starget

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// decodeStrict splits a multi-document YAML stream on "---" lines and
// decodes every document strictly (unknown or duplicate fields fail) into
// the typed object of its kind. A lost separator shows up as a decode
// error or a count mismatch, never as fewer objects silently applied.
func decodeStrict(t *testing.T, b []byte) []runtime.Object {
	t.Helper()
	objs, err := decodeStream(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func decodeStream(b []byte) ([]runtime.Object, error) {
	docs := regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1)
	var out []runtime.Object
	for i, d := range docs {
		if strings.TrimSpace(d) == "" {
			return nil, fmt.Errorf("document %d is empty", i)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(d), &tm); err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		var obj runtime.Object
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			obj = &corev1.Namespace{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "v1 Pod":
			obj = &corev1.Pod{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "v1 ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		case "rbac.authorization.k8s.io/v1 Role":
			obj = &rbacv1.Role{}
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			obj = &rbacv1.RoleBinding{}
		default:
			return nil, fmt.Errorf("document %d: unexpected %q %q", i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(d), obj); err != nil {
			return nil, fmt.Errorf("document %d (%s): strict decode: %v", i, tm.Kind, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it after review):\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  golden: %q\n  now:    %q", i+1, x, y)
		}
	}
	return ""
}

func dryRunYAML(t *testing.T, cfg Config) ([]byte, *Manifests) {
	t.Helper()
	l, err := OfflineLayout(cfg, "dry-run-token")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(l)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteYAML(&buf, m.Objects()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), m
}

// Every manifest of a full run: decoded strictly, counted, checked for the
// properties the run depends on, and compared with the golden file.
func TestGoldenManifests(t *testing.T) {
	cfg := Config{Namespace: "cnibench", Image: "ghcr.io/cnibench/cnibench:v0.1.0", RunID: "20250101-120000-abcd",
		ClientNode: "worker-a", ServerNode: "worker-b", Placements: allPlacements}
	b, m := dryRunYAML(t, cfg)
	objs := decodeStrict(t, b)
	// Namespace, Secret, 5 agent pods, 2 Services.
	if len(objs) != 9 || len(objs) != len(m.Objects()) {
		t.Fatalf("%d documents, %d objects built, want 9", len(objs), len(m.Objects()))
	}
	pods := 0
	for _, o := range objs {
		if errs := validateObject(o, ""); len(errs) > 0 {
			t.Errorf("%T: the API server would refuse it: %v", o, errs.ToAggregate())
		}
		meta := o.(metav1.Object)
		if meta.GetLabels()[LabelManagedBy] != ManagedBy || meta.GetLabels()[LabelRunID] != cfg.RunID {
			t.Errorf("%T %s lacks the managed-by / run-id labels", o, meta.GetName())
		}
		if _, ok := o.(*corev1.Namespace); !ok && meta.GetNamespace() != "cnibench" {
			t.Errorf("%s is in namespace %q", meta.GetName(), meta.GetNamespace())
		}
		p, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		pods++
		ep := p.Labels[LabelEndpoint]
		spec, _ := lookupEndpoint(ep)
		if node := affinityNode(p); node != []string{"worker-a", "worker-b"}[spec.Node] {
			t.Errorf("%s pinned to %s", p.Name, node)
		}
		if p.Spec.HostNetwork != spec.Host || (spec.Host && p.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet) {
			t.Errorf("%s: hostNetwork %v dns %s", p.Name, p.Spec.HostNetwork, p.Spec.DNSPolicy)
		}
		c := p.Spec.Containers[0]
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || !c.Resources.Limits.Cpu().IsZero() {
			t.Errorf("%s: requests %v limits %v: want CPU and memory requests, no CPU limit", p.Name, c.Resources.Requests, c.Resources.Limits)
		}
		if c.Env[0].ValueFrom.SecretKeyRef.Name != SecretName || strings.Contains(strings.Join(c.Command, " "), "dry-run-token") {
			t.Errorf("%s: the token must come from the Secret, never argv", p.Name)
		}
	}
	if pods != 5 {
		t.Errorf("%d pods, want 5", pods)
	}
	golden(t, "manifests-all.yaml", b)
}

// A lost separator merges two documents: the strict decoder must refuse
// it rather than silently apply one object instead of two.
func TestStrictDecodeCatchesLostSeparator(t *testing.T) {
	cfg := Config{Namespace: "cnibench", Image: "x:y", RunID: "r", ClientNode: "a", ServerNode: "b", Placements: allPlacements}
	b, _ := dryRunYAML(t, cfg)
	broken := bytes.Replace(b, []byte("---\napiVersion: v1\nkind: Service\n"), []byte("apiVersion: v1\nkind: Service\n"), 1)
	if bytes.Equal(broken, b) {
		t.Fatal("no Service separator found to remove")
	}
	objs, err := decodeStream(broken)
	if err == nil {
		t.Errorf("a stream with a lost separator decoded into %d objects without error", len(objs))
	} else if !strings.Contains(err.Error(), "strict decode") {
		t.Errorf("unexpected error: %v", err)
	}
}

func TestGoldenRBAC(t *testing.T) {
	objs, err := RBAC("cnibench", Subject{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteYAML(&buf, objs); err != nil {
		t.Fatal(err)
	}
	got := decodeStrict(t, buf.Bytes())
	if len(got) != len(objs) || len(got) != 6 {
		t.Fatalf("%d documents for %d objects, want 6", len(got), len(objs))
	}
	for _, o := range got {
		var rules []rbacv1.PolicyRule
		switch r := o.(type) {
		case *rbacv1.ClusterRole:
			rules = r.Rules
		case *rbacv1.Role:
			rules = r.Rules
		}
		for _, rule := range rules {
			for _, v := range append(append(rule.Verbs, rule.Resources...), rule.APIGroups...) {
				if v == "*" {
					t.Errorf("wildcard in %+v", rule)
				}
			}
		}
	}
	golden(t, "rbac.yaml", buf.Bytes())
	if _, err := RBAC("cnibench", Subject{User: "a", Group: "b"}); err == nil {
		t.Error("two subjects accepted")
	}
}
