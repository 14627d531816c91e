package haproxy

// MaxConn is each lab proxy's connection limit: far above the
// benchmark's 64 or 256 connections, and HAProxy needs about two
// descriptors per connection within the hard RLIMIT_NOFILE (20,000 in
// some containers).
const MaxConn = 4096

// Writer writes one line of a config, format and args as fmt's.
type Writer func(format string, a ...any)

// Global writes the start of the global section every lab proxy shares:
// one thread (so its CPU is one core at most on a small machine shared
// with client and server), MaxConn, warnings to stderr and its abstract
// stats socket (per namespace, leaves no file). The caller may add lines.
func Global(w Writer, stats string) {
	w("global")
	w("    nbthread 1")
	w("    maxconn %d", MaxConn)
	w("    log stderr format raw local0 warning")
	w("    stats socket abns@%s level operator", stats)
}

// Defaults writes the defaults section, after a blank line: mode tcp or,
// with http, mode http keeping connections alive on both sides ("http-reuse
// always"); 5 s to connect, 30 s idle.
func Defaults(w Writer, http bool) {
	w("")
	w("defaults")
	if !http {
		w("    mode tcp")
		w("    log global")
	} else {
		w("    mode http")
		w("    log global")
		w("    option http-keep-alive")
		w("    http-reuse always")
	}
	w("    timeout connect 5s")
	w("    timeout client 30s")
	w("    timeout server 30s")
	if http {
		w("    timeout http-keep-alive 30s")
	}
}
