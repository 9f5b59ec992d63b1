package disclosure

import "bytes"

// quick holds, per rule, a necessary condition cheap enough to try on a
// whole outcome at once (literal searches and run lengths, no regular
// expression): a rule whose condition fails is not tried on any string.
// lower is text in ASCII lower case.
var quick = map[string]func(text, lower []byte) bool{
	"artifactory": func(t, _ []byte) bool { return has(t, "AKC", "AP") },
	RuleAWSAccessKeyID: func(t, _ []byte) bool {
		return has(t, "A3T", "AKIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "ASIA")
	},
	RuleAWSSecretAccessKey: func(t, _ []byte) bool { return has(t, "AWS", "aws") },
	"aws_mws_key":          func(t, _ []byte) bool { return has(t, "amzn.mws.") },
	"azure":                func(t, _ []byte) bool { return run(t, isBase64, 88) },
	"basic_auth":           func(_, l []byte) bool { return has(l, "basic") },
	"bearer_auth":          func(_, l []byte) bool { return has(l, "bearer") },
	RuleGitHubToken:        func(t, _ []byte) bool { return has(t, "ghp_", "gho_", "ghu_", "ghs_", "ghr_") },
	RuleJWT:                func(t, _ []byte) bool { return has(t, "eyJ") },
	"mailchimp":            func(t, _ []byte) bool { return has(t, "-us") },
	"npm":                  func(t, _ []byte) bool { return has(t, "npm_") },
	RulePrivateKey:         func(t, _ []byte) bool { return has(t, "PRIVATE KEY", "PuTTY-User-Key-File-") },
	"sendgrid":             func(t, _ []byte) bool { return has(t, "SG.") },
	RuleSlackToken:         func(t, _ []byte) bool { return has(t, "xox", "xapp", "hooks.slack.com") },
	"square":               func(t, _ []byte) bool { return has(t, "sq0") },
	RuleStripeKey:          func(t, _ []byte) bool { return has(t, "k_live_", "k_test_") },
	"twilio":               func(t, _ []byte) bool { return run(t, isHex, 32) },
	RuleURLPassword:        func(t, _ []byte) bool { return has(t, "://") && bytes.IndexByte(t, '@') >= 0 },
	RuleGoogleAPIKey:       func(t, _ []byte) bool { return has(t, "AIza") },
	RuleBearerToken:        func(_, l []byte) bool { return has(l, "bearer") },
	RuleSecretAssignment:   func(_, l []byte) bool { return has(l, "key", "pass", "pwd", "secret", "token", "contrase") },
	RuleHighEntropy:        func(t, _ []byte) bool { return run(t, isBase64, 32) },
}

// has reports whether t holds any of the words.
func has(t []byte, words ...string) bool {
	for _, w := range words {
		if bytes.Contains(t, []byte(w)) {
			return true
		}
	}
	return false
}

// run reports whether t holds n bytes in a row of the class.
func run(t []byte, class func(byte) bool, n int) bool {
	k := 0
	for _, c := range t {
		if class(c) {
			if k++; k >= n {
				return true
			}
		} else {
			k = 0
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isBase64(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '+' || c == '/' || c == '=' || c == '_' || c == '-'
}

// lowerASCII is t in ASCII lower case.
func lowerASCII(t []byte) []byte {
	out := make([]byte, len(t))
	for i, c := range t {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
