package dnsload

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// Packing and parsing use golang.org/x/net/dns/dnsmessage rather than
// miekg/dns: its Parser is lazy and allocation-free (a header, then one
// record at a time, into values), so a response is validated without
// touching the heap, while miekg/dns unpacks a whole dns.Msg with its RR
// interfaces and slices for every packet. Queries are packed once, up
// front; only the 2-byte ID changes per send.

// queries holds every name's query packet (ID 0, RD set, one A/IN
// question), back to back in one arena.
type queries struct {
	arena []byte
	off   []int32 // packet i is arena[off[i]:off[i+1]]
}

func buildQueries(names []string) (*queries, error) {
	q := &queries{off: make([]int32, 0, len(names)+1)}
	q.off = append(q.off, 0)
	for _, n := range names {
		var err error
		if q.arena, err = appendQuery(q.arena, n, 0); err != nil {
			return nil, err
		}
		q.off = append(q.off, int32(len(q.arena)))
	}
	return q, nil
}

func (q *queries) len() int { return len(q.off) - 1 }

func (q *queries) packet(i int) []byte { return q.arena[q.off[i]:q.off[i+1]] }

// appendQuery appends the query packet for an A record of name.
func appendQuery(buf []byte, name string, id uint16) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return nil, fmt.Errorf("dnsload: bad name %q", name)
	}
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	n, err := dnsmessage.NewName(name)
	if err != nil {
		return nil, fmt.Errorf("dnsload: bad name %q: %v", name, err)
	}
	b := dnsmessage.NewBuilder(buf, dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(dnsmessage.Question{Name: n, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}); err != nil {
		return nil, fmt.Errorf("dnsload: bad name %q: %v", name, err)
	}
	out, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("dnsload: bad name %q: %v", name, err)
	}
	return out, nil
}

// verdict is what a response says about its query.
type verdict uint8

const (
	vOK        verdict = iota // NOERROR with an A record
	vRcode                    // RCODE other than NOERROR
	vNoAnswer                 // NOERROR without an A record
	vStray                    // not an answer to this query (question differs)
	vMalformed                // not a DNS response, or does not parse
)

// check validates resp as the response to query (whose ID it carries) and
// returns its RCODE. It does not allocate.
func check(p *dnsmessage.Parser, resp, query []byte) (int, verdict) {
	h, err := p.Start(resp)
	if err != nil || !h.Response || h.OpCode != 0 {
		return 0, vMalformed
	}
	rcode := int(h.RCode)
	// The question section is echoed verbatim (the first name of a message
	// cannot be compressed): one question, the same bytes. Some servers
	// drop it from error responses (FORMERR, NOTIMP).
	question := query[12:]
	switch qd := int(resp[4])<<8 | int(resp[5]); {
	case qd == 0 && rcode != 0:
		return rcode, vRcode
	case qd == 0:
		return rcode, vMalformed
	case qd != 1:
		return rcode, vStray
	case len(resp) < 12+len(question):
		return rcode, vMalformed
	case !bytes.Equal(resp[12:12+len(question)], question):
		return rcode, vStray
	}
	if rcode != 0 {
		return rcode, vRcode
	}
	if err := p.SkipAllQuestions(); err != nil {
		return rcode, vMalformed
	}
	for {
		ah, err := p.AnswerHeader()
		if err == dnsmessage.ErrSectionDone {
			return rcode, vNoAnswer
		}
		if err != nil {
			return rcode, vMalformed
		}
		if ah.Type == dnsmessage.TypeA && ah.Class == dnsmessage.ClassINET {
			if _, err := p.AResource(); err != nil {
				return rcode, vMalformed
			}
			return rcode, vOK
		}
		if err := p.SkipAnswer(); err != nil {
			return rcode, vMalformed
		}
	}
}

var rcodeNames = [...]string{
	0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED",
	6: "YXDOMAIN", 7: "YXRRSET", 8: "NXRRSET", 9: "NOTAUTH", 10: "NOTZONE",
}

// rcodeName names a 4-bit RCODE as dig and dnsperf print it.
func rcodeName(c int) string {
	if c >= 0 && c < len(rcodeNames) {
		return rcodeNames[c]
	}
	return fmt.Sprintf("RCODE%d", c)
}
