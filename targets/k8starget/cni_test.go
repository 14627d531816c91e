package k8starget

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func ds(ns, name, image string, env []corev1.EnvVar, args ...string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Image: "busybox:1"},
			{Name: name, Image: image, Env: env, Args: args},
		}}}},
	}
}

func cm(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
}

func TestDetectCNI(t *testing.T) {
	cases := []struct {
		name  string
		objs  []runtime.Object
		check func(t *testing.T, c *CNI)
	}{
		{"cilium native kpr with kube-proxy ipvs", []runtime.Object{
			ds("kube-system", "cilium", "quay.io/cilium/cilium:v1.16.3@sha256:abc", nil),
			cm("kube-system", "cilium-config", map[string]string{"routing-mode": "native", "kube-proxy-replacement": "true",
				"bpf-lb-map-max": "512000", "enable-hubble": "true", "unrelated": "x"}),
			ds("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.31.2", nil),
			cm("kube-system", "kube-proxy", map[string]string{"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: ipvs\n"}),
		}, func(t *testing.T, c *CNI) {
			cc := c.Cilium
			if c.Plugin != "cilium" || c.Agent().Version != "v1.16.3" || cc == nil || cc.RoutingMode != "native" || cc.TunnelProtocol != "" ||
				cc.KubeProxyReplacement != "true" || cc.BPFLBMapMax != "512000" || cc.EnableHubble != "true" || cc.Keys["unrelated"] != "" {
				t.Errorf("%+v %+v", c, cc)
			}
			if c.KubeProxy == nil || c.KubeProxy.Mode != "ipvs" || c.KubeProxy.Source != "ConfigMap kube-system/kube-proxy" || c.KubeProxy.MinSyncPeriod != "1s (default)" {
				t.Errorf("kube-proxy %+v", c.KubeProxy)
			}
		}},
		{"old cilium tunnel=geneve, defaults", []runtime.Object{
			ds("cilium", "cilium", "quay.io/cilium/cilium:v1.13.4", nil),
			cm("cilium", "cilium-config", map[string]string{"tunnel": "geneve"}),
		}, func(t *testing.T, c *CNI) {
			cc := c.Cilium
			if cc.RoutingMode != "tunnel" || cc.TunnelProtocol != "geneve" || cc.KubeProxyReplacement != "false (default)" || cc.BPFLBMapMax != "65536 (default)" || c.KubeProxy != nil {
				t.Errorf("%+v %+v", cc, c.KubeProxy)
			}
		}},
		{"cilium 1.14+ tunnel without protocol", []runtime.Object{
			ds("kube-system", "cilium", "quay.io/cilium/cilium:v1.15.0", nil),
			cm("kube-system", "cilium-config", map[string]string{"routing-mode": "tunnel"}),
		}, func(t *testing.T, c *CNI) {
			if c.Cilium.RoutingMode != "tunnel" || c.Cilium.TunnelProtocol != "vxlan (default)" {
				t.Errorf("%+v", c.Cilium)
			}
		}},
		{"calico ebpf with kube-proxy nftables flag", []runtime.Object{
			ds("calico-system", "calico-node", "docker.io/calico/node:v3.28.1", []corev1.EnvVar{{Name: "FELIX_BPFENABLED", Value: "true"}, {Name: "OTHER", Value: "x"}}),
			ds("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.31.2", nil, "--config=/var/lib/kube-proxy/config.conf", "--proxy-mode=nftables", "--nftables-min-sync-period=5s"),
		}, func(t *testing.T, c *CNI) {
			if c.Plugin != "calico" || c.Source != "DaemonSet calico-system/calico-node" || c.Agent().Env["FELIX_BPFENABLED"] != "true" || len(c.Agent().Env) != 1 || c.Agent().Version != "v3.28.1" {
				t.Errorf("%+v", c.Agent())
			}
			if c.KubeProxy.Mode != "nftables" || c.KubeProxy.Source != "DaemonSet flag --proxy-mode" || c.KubeProxy.MinSyncPeriod != "5s (flag)" {
				t.Errorf("%+v", c.KubeProxy)
			}
		}},
		{"aws vpc cni with calico for policy, EKS kube-proxy config", []runtime.Object{
			ds("kube-system", "aws-node", "602401143452.dkr.ecr.eu-west-1.amazonaws.com/amazon-k8s-cni:v1.18.5-eksbuild.1", []corev1.EnvVar{{Name: "ENABLE_PREFIX_DELEGATION", Value: "true"}}),
			ds("kube-system", "kube-proxy", "kube-proxy:v1.31.2-eksbuild.3", nil),
			cm("kube-system", "kube-proxy-config", map[string]string{"config": "kind: KubeProxyConfiguration\nmode: \"iptables\"\niptables:\n  minSyncPeriod: 10s\nnftables:\n  minSyncPeriod: 3s\n"}),
		}, func(t *testing.T, c *CNI) {
			if c.Plugin != "aws-vpc-cni" || c.Agent().Version != "v1.18.5-eksbuild.1" || c.Agent().Env["ENABLE_PREFIX_DELEGATION"] != "true" {
				t.Errorf("%+v", c.Agent())
			}
			if c.KubeProxy.Mode != "iptables" || c.KubeProxy.Source != "ConfigMap kube-system/kube-proxy-config" || c.KubeProxy.MinSyncPeriod != "10s" {
				t.Errorf("%+v", c.KubeProxy)
			}
		}},
		{"flannel vxlan, kube-proxy default mode", []runtime.Object{
			ds("kube-flannel", "kube-flannel-ds", "docker.io/flannel/flannel:v0.25.6", nil),
			cm("kube-flannel", "kube-flannel-cfg", map[string]string{"net-conf.json": `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}`}),
			ds("kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.31.2", nil),
			cm("kube-system", "kube-proxy", map[string]string{"config.conf": "kind: KubeProxyConfiguration\nmode: \"\"\n"}),
		}, func(t *testing.T, c *CNI) {
			if c.Plugin != "flannel" || c.FlannelBackend != "vxlan" || c.KubeProxy.Mode != "iptables" {
				t.Errorf("%+v %+v", c, c.KubeProxy)
			}
		}},
		{"nothing known", []runtime.Object{ds("default", "node-exporter", "prom/node-exporter:v1", nil)}, func(t *testing.T, c *CNI) {
			if c.Plugin != "unknown" || c.Source != "no CNI DaemonSet found" || c.Agent() != nil || len(c.Components) != 0 {
				t.Errorf("%+v", c)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DetectCNI(context.Background(), newFakeCluster(tc.objs...))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestImageTag(t *testing.T) {
	for in, want := range map[string]string{
		"quay.io/cilium/cilium:v1.16.3@sha256:abc": "v1.16.3",
		"localhost:5000/cnibench":                  "",
		"localhost:5000/cnibench:dev":              "dev",
		"busybox":                                  "",
	} {
		if got := imageTag(in); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", in, got, want)
		}
	}
}
