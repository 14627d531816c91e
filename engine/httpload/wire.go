package httpload

import (
	"bytes"
	"errors"
)

// The minimal HTTP/1.1 pieces shared by client and server: a read buffer
// and header-field parsing. Nothing here allocates per message once the
// buffer has grown to the message size.

const (
	initialBuf = 4 << 10
	maxHeader  = 64 << 10 // largest header block accepted
)

var (
	errHeaderTooLarge = errors.New("header block larger than 64 KiB")
	crlf              = []byte("\r\n")
	crlfcrlf          = []byte("\r\n\r\n")
)

// protoError marks a message that is not valid HTTP/1.x.
type protoError struct{ msg string }

func (e *protoError) Error() string { return "bad HTTP message: " + e.msg }

// reader buffers one connection's input. buf[r:w] is unread.
type reader struct {
	buf  []byte
	r, w int
}

func newReader(size int) reader { return reader{buf: make([]byte, size)} }

func (rd *reader) buffered() int { return rd.w - rd.r }

func (rd *reader) reset() { rd.r, rd.w = 0, 0 }

// makeRoom makes space after rd.w: it rewinds an empty buffer, compacts,
// or grows it up to maxHeader.
func (rd *reader) makeRoom() error {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	}
	if rd.w < len(rd.buf) {
		return nil
	}
	if rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
		return nil
	}
	if len(rd.buf) >= maxHeader {
		return errHeaderTooLarge
	}
	nb := make([]byte, 2*len(rd.buf))
	rd.w = copy(nb, rd.buf[rd.r:rd.w])
	rd.r = 0
	rd.buf = nb
	return nil
}

// msgHeader is what either side needs from a header block.
type msgHeader struct {
	contentLength int64 // -1: none given
	chunked       bool
	connClose     bool // "Connection: close"
	connKeepAlive bool // "Connection: keep-alive"
	expect100     bool // "Expect: 100-continue"
}

// parseFields scans the header fields of block (the header block without
// its first line, CRLFCRLF included).
func parseFields(block []byte, h *msgHeader) error {
	h.contentLength = -1
	for len(block) > 2 {
		i := bytes.Index(block, crlf)
		if i < 0 {
			return &protoError{"unterminated header line"}
		}
		l := block[:i]
		block = block[i+2:]
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 {
			return &protoError{"header line without colon"}
		}
		name, val := l[:colon], trimSpace(l[colon+1:])
		switch len(name) {
		case 14: // content-length
			if eqFold(name, "content-length") {
				if len(val) == 0 || len(val) > 18 {
					return &protoError{"bad content-length"}
				}
				var n int64
				for _, b := range val {
					if b < '0' || b > '9' {
						return &protoError{"bad content-length"}
					}
					n = n*10 + int64(b-'0')
				}
				if h.contentLength >= 0 && h.contentLength != n {
					return &protoError{"conflicting content-length"}
				}
				h.contentLength = n
			}
		case 17: // transfer-encoding
			if eqFold(name, "transfer-encoding") {
				if hasToken(val, "chunked") {
					h.chunked = true
				} else if !hasToken(val, "identity") {
					return &protoError{"unsupported transfer-encoding"}
				}
			}
		case 10: // connection
			if eqFold(name, "connection") {
				if hasToken(val, "close") {
					h.connClose = true
				}
				if hasToken(val, "keep-alive") {
					h.connKeepAlive = true
				}
			}
		case 6: // expect
			if eqFold(name, "expect") && hasToken(val, "100-continue") {
				h.expect100 = true
			}
		}
	}
	return nil
}

// eqFold compares b with lower, an ASCII lower-case string, ignoring case.
func eqFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v holds tok (lower
// case), ignoring case.
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var item []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			item, v = v, nil
		}
		if eqFold(trimSpace(item), tok) {
			return true
		}
	}
	return false
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func unhex(b byte) int {
	switch {
	case '0' <= b && b <= '9':
		return int(b - '0')
	case 'a' <= b && b <= 'f':
		return int(b-'a') + 10
	case 'A' <= b && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}
