package ambient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"slices"
	"time"
)

// certs are a run's mesh identities, PEM: a CA made for the run (its key
// is dropped once the nodes' certificates are signed, so nothing else can
// join) and each node's certificate with its key, in one file as
// HAProxy's "crt" wants it.
type certs struct {
	CA    []byte            // the CA certificate
	Nodes map[string][]byte // node name → certificate + key
}

// trustDomain names the identities, as Istio's SPIFFE IDs do.
const trustDomain = "cnibench.lab"

// certLife covers any run; the certificates live in the state dir only.
const certLife = 7 * 24 * time.Hour

// newCerts makes a CA and one certificate per node of s (and the
// waypoint's, when s has one), each valid as
// server and client (the proxies verify each other both ways), naming the
// node by its address and by a SPIFFE URI spiffe://cnibench.lab/<lab>/<node>.
func newCerts(s Spec, lab string) (certs, error) {
	now := time.Now().Add(-time.Minute)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certs{}, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "cnibench ambient CA " + lab},
		NotBefore:             now,
		NotAfter:              now.Add(certLife),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return certs{}, fmt.Errorf("ambient: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return certs{}, err
	}
	out := certs{CA: pemBlock("CERTIFICATE", caDER), Nodes: map[string][]byte{}}
	ids := s.Nodes
	if wp, ok := s.node(s.Waypoint); ok {
		ids = append(slices.Clone(ids), Node{Name: waypointName, IP: wp.IP})
	}
	for _, n := range ids {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return certs{}, err
		}
		id := &url.URL{Scheme: "spiffe", Host: trustDomain, Path: "/" + lab + "/" + n.Name}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: n.Name},
			NotBefore:    now,
			NotAfter:     now.Add(certLife),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			IPAddresses:  []net.IP{net.ParseIP(n.IP)},
			URIs:         []*url.URL{id},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return certs{}, fmt.Errorf("ambient: certificate of %s: %w", n.Name, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return certs{}, err
		}
		out.Nodes[n.Name] = append(pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER)...)
	}
	return out, nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// serial is a random 128-bit serial number, as RFC 5280 asks.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}
