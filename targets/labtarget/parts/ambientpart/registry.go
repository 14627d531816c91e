package ambientpart

import "sync"

// The meshes open in the process, by lab prefix: the waypoint part opens
// after the ambient part and joins its mesh (its CA, its node proxies).
var (
	meshesMu sync.Mutex
	meshes   = map[string]*opened{}
)

func register(prefix string, o *opened) {
	meshesMu.Lock()
	defer meshesMu.Unlock()
	meshes[prefix] = o
}

func unregister(prefix string) {
	meshesMu.Lock()
	defer meshesMu.Unlock()
	delete(meshes, prefix)
}

// openMesh is the ambient mesh open on the lab of prefix, nil if none.
func openMesh(prefix string) *opened {
	meshesMu.Lock()
	defer meshesMu.Unlock()
	return meshes[prefix]
}
