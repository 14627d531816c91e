package k8starget

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a connection to the API server chosen by kubeconfig and
// context, as kubectl would choose it.
type Cluster struct {
	Clientset kubernetes.Interface
	Dynamic   dynamic.Interface // custom resources (CiliumNetworkPolicy)
	Config    *rest.Config
	Context   string // the kubeconfig context used ("" in-cluster)
}

// Client-side rate limit of a run's clientset (client-go's default of 5
// QPS would make waiting for agents and cleanup needlessly slow).
const (
	DefaultClientQPS   = 50
	DefaultClientBurst = 100
)

// Connect loads the kubeconfig (explicit path, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster service account) and builds a
// client. Nothing is sent to the server yet.
func Connect(kubeconfig, context string) (*Cluster, error) {
	return ConnectWith(kubeconfig, context, DefaultClientQPS, DefaultClientBurst)
}

// ConnectWith is Connect with client-go's rate limit (requests per second
// and burst) set: a Service-scale sweep raises it above its own write
// pacing (ScaleConfig.ClientRate), so that pacing is what limits writes.
func ConnectWith(kubeconfig, context string, qps float32, burst int) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no kubeconfig found ($KUBECONFIG, ~/.kube/config) and not running in a pod: pass --kubeconfig")
	}
	if err != nil {
		where := "kubeconfig"
		if kubeconfig != "" {
			where = "--kubeconfig " + kubeconfig
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	name := context
	if raw, err := cc.RawConfig(); err == nil && name == "" {
		name = raw.CurrentContext
	}
	cfg.QPS, cfg.Burst = qps, burst
	cfg.UserAgent = "cnibench"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	return &Cluster{Clientset: cs, Dynamic: dyn, Config: cfg, Context: name}, nil
}
