package proxy

import (
	"context"
	"regexp"
	"strings"
)

// Resources route by the most specific claim: a server whose last listing
// holds the URI, else the server whose URI template matches it with the
// most literal text. A URI two servers claim equally is refused, never
// guessed.

// uriTemplate is one server's URI template, compiled to match URIs.
type uriTemplate struct {
	raw string
	re  *regexp.Regexp
	// literal counts the template's literal characters; broad counts its
	// expressions that match across '/' (reserved and fragment
	// expansion, path segments). More literal, then less broad, is more
	// specific.
	literal, broad int
}

// compileTemplate compiles an RFC 6570 template to a matcher for the URIs
// it expands to, or nil for one it cannot read.
func compileTemplate(t string) *uriTemplate {
	var b strings.Builder
	b.WriteString("^")
	out := &uriTemplate{raw: t}
	for i := 0; i < len(t); {
		if t[i] != '{' {
			j := strings.IndexByte(t[i:], '{')
			if j < 0 {
				j = len(t) - i
			}
			lit := t[i : i+j]
			if strings.ContainsRune(lit, '}') {
				return nil
			}
			b.WriteString(regexp.QuoteMeta(lit))
			out.literal += len(lit)
			i += j
			continue
		}
		end := strings.IndexByte(t[i:], '}')
		if end < 2 {
			return nil
		}
		expr := t[i+1 : i+end]
		i += end + 1
		op := byte(0)
		if strings.ContainsRune("+#./;?&", rune(expr[0])) {
			op, expr = expr[0], expr[1:]
		}
		if expr == "" {
			return nil
		}
		switch op {
		case 0:
			b.WriteString(`[^/?#]*`)
		case '+':
			b.WriteString(`.*`)
			out.broad++
		case '#':
			b.WriteString(`(?:#.*)?`)
			out.broad++
		case '.':
			b.WriteString(`(?:\.[^/?#]*)*`)
		case '/':
			b.WriteString(`(?:/[^?#]*)*`)
			out.broad++
		case ';':
			b.WriteString(`(?:;[^/?#]*)*`)
		case '?':
			b.WriteString(`(?:\?[^#]*)?`)
		case '&':
			b.WriteString(`(?:&[^#]*)*`)
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	out.re = re
	return out
}

// moreSpecific orders two matching templates: 1 when a is more specific,
// -1 when b is, 0 when neither.
func moreSpecific(a, b *uriTemplate) int {
	switch {
	case a.literal != b.literal:
		if a.literal > b.literal {
			return 1
		}
		return -1
	case a.broad != b.broad:
		if a.broad < b.broad {
			return 1
		}
		return -1
	}
	return 0
}

// claimOf is one server's claim on a URI: held by its listing, or matched
// by its most specific template (nil when neither).
func (u *upstream) claimOf(uri string) (held bool, best *uriTemplate) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.uris[uri] {
		return true, nil
	}
	for _, t := range u.templates {
		if t.raw == uri {
			// A completion's reference names the template itself.
			return true, nil
		}
	}
	for _, t := range u.templates {
		if t.re.MatchString(uri) && (best == nil || moreSpecific(t, best) > 0) {
			best = t
		}
	}
	return false, best
}

// routeURI finds the one server a URI belongs to among those forwarding
// s. It lists resources and templates first when some server has never
// been listed (a host may read a URI it learned elsewhere). A URI two
// servers claim equally is a refusal naming both.
func (p *Proxy) routeURI(ctx context.Context, uri string, s Surface) (*upstream, error) {
	for _, u := range p.upstreams() {
		if !u.allowed[s] || !u.allowed[SurfaceResources] {
			continue
		}
		u.mu.Lock()
		listed := u.listed
		u.mu.Unlock()
		if !listed {
			if _, err := p.listResources(ctx); err != nil {
				return nil, err
			}
			if _, err := p.listTemplates(ctx); err != nil {
				return nil, err
			}
			break
		}
	}
	return p.routeListed(uri, s)
}

func (p *Proxy) routeListed(uri string, s Surface) (*upstream, error) {
	type match struct {
		u *upstream
		t *uriTemplate
	}
	var forwarding, holders []*upstream
	var best []match
	for _, u := range p.upstreams() {
		if !u.allowed[s] {
			continue
		}
		forwarding = append(forwarding, u)
		held, t := u.claimOf(uri)
		switch {
		case held:
			holders = append(holders, u)
		case t == nil:
		case len(best) == 0:
			best = []match{{u, t}}
		default:
			switch moreSpecific(t, best[0].t) {
			case 1:
				best = []match{{u, t}}
			case 0:
				best = append(best, match{u, t})
			}
		}
	}
	switch {
	case len(holders) == 1:
		return holders[0], nil
	case len(holders) > 1:
		return nil, refuse("servers %s and %s both list the resource %s; the proxy routes it to neither", holders[0].name, holders[1].name, quote(uri, boundURI))
	case len(best) == 1:
		return best[0].u, nil
	case len(best) > 1:
		return nil, refuse("servers %s and %s both claim the resource %s with templates %s and %s; the proxy routes it to neither",
			best[0].u.name, best[1].u.name, quote(uri, boundURI), quote(best[0].t.raw, boundURI), quote(best[1].t.raw, boundURI))
	case len(forwarding) == 1:
		return forwarding[0], nil
	}
	return nil, nil
}
