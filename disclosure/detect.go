package disclosure

import (
	"regexp"
	"slices"
	"strings"

	"github.com/DefangLabs/secret-detector/pkg/scanner"
	"github.com/DefangLabs/secret-detector/pkg/secrets"
)

// Secret rule ids. Most are the library's detectors, renamed to say what
// they find; GoogleAPIKey and BearerToken are ours, for formats the
// library does not know.
const (
	RuleAWSAccessKeyID     = "aws_access_key_id"
	RuleAWSSecretAccessKey = "aws_secret_access_key"
	RuleGitHubToken        = "github_token"
	RuleSlackToken         = "slack_token"
	RuleStripeKey          = "stripe_key"
	RuleJWT                = "jwt"
	RulePrivateKey         = "private_key"
	RuleURLPassword        = "url_password"
	RuleSecretAssignment   = "secret_assignment"
	RuleHighEntropy        = "high_entropy_string"
	RuleGoogleAPIKey       = "google_api_key"
	RuleBearerToken        = "bearer_token"
)

// libraryNames maps the library's detector names to rule ids; a detector
// not named here keeps its own name.
var libraryNames = map[string]string{
	"aws_client_id":       RuleAWSAccessKeyID,
	"aws_secret_key":      RuleAWSSecretAccessKey,
	"github":              RuleGitHubToken,
	"slack":               RuleSlackToken,
	"stripe":              RuleStripeKey,
	"pk":                  RulePrivateKey,
	"keyword":             RuleSecretAssignment,
	"high_entropy_string": RuleHighEntropy,
}

// detector is one secret rule.
type detector struct {
	id  string
	lib secrets.Detector // nil for ours
	re  *regexp.Regexp   // ours: the first group, or the match, is the secret
	// pre, for a library detector, matches wherever the detector could
	// find something (a necessary condition, not a finding): the library
	// judges only the lines it matches, or the whole text for a rule whose
	// secrets span lines. Its regular expressions scan a KiB in
	// milliseconds; these scan it in microseconds.
	pre       *regexp.Regexp
	multiline bool
}

// prefilters are the necessary conditions of the library's detectors,
// loosened from its own patterns. A detector without one is judged on
// the whole text.
var prefilters = map[string]string{
	"artifactory":          `AKC[a-zA-Z0-9]{10}|AP[0-9A-F][a-zA-Z0-9]{8}`,
	RuleAWSAccessKeyID:     `(?:A3T[A-Z0-9]|AKIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASIA)[A-Z0-9]{16}`,
	RuleAWSSecretAccessKey: `(?:AWS|aws)`,
	"aws_mws_key":          `amzn\.mws\.`,
	"azure":                `[a-zA-Z0-9+/=]{88}`,
	"basic_auth":           `(?i)basic +[a-zA-Z0-9+/,_\-]{2}`,
	"bearer_auth":          `(?i)bearer +[a-zA-Z0-9+/,_\-.=]{2}`,
	RuleGitHubToken:        `gh[pousr]_`,
	RuleJWT:                `eyJ[A-Za-z0-9_=-]+\.eyJ`,
	"mailchimp":            `-us[0-9]`,
	"npm":                  `npm_[a-zA-Z0-9]{36}`,
	RulePrivateKey:         `PRIVATE KEY|PuTTY-User-Key-File-`,
	"sendgrid":             `SG\.`,
	RuleSlackToken:         `xox|xapp|hooks\.slack\.com`,
	"square":               `sq0(?:atp|csp)-`,
	RuleStripeKey:          `[rs]k_(?:live|test)_`,
	"twilio":               `(?:AC|SK)[0-9a-fA-F]{32}`,
	RuleURLPassword:        `[a-z][a-z0-9+.-]+://[^:\s]*:[^@:\s]+@`,
	RuleSecretAssignment: `(?i)api[-_]?key|access[-_]?key|auth[-_]?key|service[-_]?key|account[-_]?key|db[-_]?key|database[-_]?key|` +
		`priv[-_]?key|private[-_]?key|client[-_]?key|db[-_]?pass|database[-_]?pass|key[-_]?pass|password|passwd|pwd|secret|token|contrase`,
	RuleHighEntropy: `[a-zA-Z0-9+/_-]{32}`,
}

// ours are the rules for formats the library does not cover.
var ours = []detector{
	{id: RuleGoogleAPIKey, re: regexp.MustCompile(`AIza[0-9A-Za-z_\-]{35}`)},
	{id: RuleBearerToken, re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{20,}=*)`)},
}

// detectors builds every rule: the library's default set (with its
// default thresholds), then ours. The order matters: specific formats
// first, so a token is named for its format before a generic rule sees it.
func detectors() ([]detector, error) {
	cfg := scanner.NewConfigWithDefaults()
	libs, missing := secrets.GetDetectorFactory().Create(cfg.Detectors, cfg.DetectorConfigs)
	if len(missing) > 0 {
		return nil, &MissingDetectorsError{Names: missing}
	}
	var out []detector
	var generic []detector
	for i, d := range libs {
		name := cfg.Detectors[i]
		id := name
		if r, ok := libraryNames[name]; ok {
			id = r
		}
		dd := detector{id: id, lib: d, multiline: id == RulePrivateKey}
		if p, ok := prefilters[id]; ok {
			dd.pre = regexp.MustCompile(p)
		}
		if id == RuleSecretAssignment || id == RuleHighEntropy {
			generic = append(generic, dd)
			continue
		}
		out = append(out, dd)
	}
	out = append(out, ours...)
	return append(out, generic...), nil
}

// MissingDetectorsError reports detectors the library did not register.
type MissingDetectorsError struct{ Names []string }

func (e *MissingDetectorsError) Error() string {
	return "disclosure: the secret detector library registered no detector named " + strings.Join(e.Names, ", ")
}

// hit is one secret found in one string.
type hit struct {
	rule  string
	value string
}

// delimiters are the characters around a token in prose, code and logs
// that the library's patterns do not take as the end of a value. No
// format a library rule finds contains one.
var delimiters = regexp.MustCompile(`[,;()\[\]{}<>"'` + "`" + `]`)

// generic says d judges a name and a value together, where the quotes and
// brackets around them are part of what it reads.
func (d detector) generic() bool { return d.id == RuleSecretAssignment || d.id == RuleHighEntropy }

// tokenLike is one unbroken token of eight characters or more.
var tokenLike = regexp.MustCompile(`^[^\s(){}\[\],;<>"'` + "`" + `]{8,}$`)

// minSecret is the shortest value redacted: a shorter "secret" would
// replace common words wherever they appear.
const minSecret = 6

// maxHighEntropy is the longest value the high-entropy rule redacts. A
// longer run of base64 is a payload (an image, a file a tool returns as
// data), not a credential: redacting it would break every image an MCP
// server returns. Secrets of a known format are found at any length.
const maxHighEntropy = 1024

// scan finds secrets in s; key, when set, is the object key s is the value
// of, for the rules that judge a key and its value together.
func scan(ds []detector, off func(rule string) bool, key, s string) []hit {
	var hits []hit
	add := func(rule, v string) {
		v = strings.TrimSpace(v)
		if len(v) < minSecret || !strings.Contains(s, v) || (rule == RuleHighEntropy && len(v) > maxHighEntropy) {
			return
		}
		if rule == RuleSecretAssignment && !tokenLike.MatchString(strings.Trim(v, `"'`)) {
			// The library's keyword rule takes any value after a
			// secret-sounding name; in code and prose that is mostly an
			// expression. A secret is one unbroken token.
			return
		}
		for _, h := range hits {
			if h.value == v {
				return
			}
		}
		hits = append(hits, hit{rule, v})
	}
	for _, d := range ds {
		if off(d.id) {
			continue
		}
		if d.re != nil {
			for _, m := range d.re.FindAllStringSubmatch(s, -1) {
				add(d.id, m[len(m)-1])
			}
			continue
		}
		if key != "" && (d.pre == nil || d.pre.MatchString(key) || d.pre.MatchString(s)) {
			found, _ := d.lib.ScanMap(map[string]string{key: s})
			for _, f := range found {
				add(d.id, f.Value)
			}
		}
		for _, part := range candidates(d, s) {
			found, _ := d.lib.Scan(part)
			if spaced := delimiters.ReplaceAllString(part, " "); spaced != part && d.pre != nil && !d.generic() {
				// The library takes a value only between blanks: a key
				// followed by a comma or in parentheses, as prose and
				// logs write them, would pass.
				more, _ := d.lib.Scan(spaced)
				found = append(found, more...)
			}
			for _, f := range found {
				add(d.id, f.Value)
			}
		}
	}
	return hits
}

// candidates are the parts of s detector d judges: the lines its
// prefilter matches, or all of s.
func candidates(d detector, s string) []string {
	if d.pre == nil {
		return []string{s}
	}
	locs := d.pre.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return nil
	}
	if d.multiline || !strings.Contains(s, "\n") {
		return []string{s}
	}
	var parts []string
	end := -1
	for _, l := range locs {
		if l[0] < end {
			continue // on a line already taken
		}
		start := strings.LastIndexByte(s[:l[0]], '\n') + 1
		end = len(s)
		if i := strings.IndexByte(s[l[0]:], '\n'); i >= 0 {
			end = l[0] + i
		}
		parts = append(parts, s[start:end])
	}
	return parts
}

// redact replaces every hit in s by its marker, longest value first so a
// token inside a longer finding is not split.
func redact(s string, hits []hit) string {
	hits = slices.Clone(hits)
	slices.SortStableFunc(hits, func(a, b hit) int { return len(b.value) - len(a.value) })
	for _, h := range hits {
		s = strings.ReplaceAll(s, h.value, "[REDACTED:"+h.rule+"]")
	}
	return s
}
