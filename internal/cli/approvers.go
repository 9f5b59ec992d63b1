package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/trace"
)

var approversCommand = &command{
	name:    "approvers",
	summary: "list, add, remove or invite the approvers whose signed decisions count",
	usage:   "list [-pin] | add NAME -key FILE [-role R] | set NAME [-role R] [-scope-kind K] [-scope-tool T] [-scope-side-effect S] [-scope-label L] | remove NAME | invite NAME [-origin URL] | keygen -out FILE",
	subs:    []string{"list", "add", "set", "remove", "invite", "keygen"},
	run:     runApprovers,
}

// defaultOrigin is where agentrt serve listens by default, as a browser
// names it: a WebAuthn relying party is a host name, never an address.
const defaultOrigin = "http://localhost:7380"

func init() {
	commandHelp["approvers"] = `An approver is a name and one enrolled public key; a decision it signs
records the signature, and a run or policy that requires signed grants
executes nothing without one. Enrolling and removing are events in the
chain naming who did it (-by, default $USER, else your account's name).
  list [-pin]             every approver, removed ones too; -pin prints the
                          lines of a pinned keys file instead
  add NAME -key FILE      enroll an ed25519 key file (PEM, public or private);
                          -role and -scope-* as for set
  set NAME                replace its roles and scope (each comma-separated):
    -role R               roles, as a policy's stages name them (finance)
    -scope-kind K         approval kinds it may decide (none: any)
    -scope-tool T         tools whose approvals it may decide (none: any)
    -scope-side-effect S  side-effect classes it may decide (none: any)
    -scope-label L        run labels k=v; it decides only runs with one
  remove NAME             remove an approver: it signs nothing more
  invite NAME [-origin U] print a one-time URL to enroll a passkey in the
                          console, valid for 15 minutes (default origin
                          ` + defaultOrigin + `)
  keygen -out FILE        write a new ed25519 private key to FILE (mode
                          0600) and its public key to FILE.pub`
}

func runApprovers(e *env, g *global, c *command, args []string) int {
	if len(args) == 0 {
		return e.usageError(c, "missing the approvers command: list, add, set, remove, invite or keygen")
	}
	sub, args := args[0], args[1:]
	if !c.hasSub(sub) {
		return e.usageError(c, fmt.Sprintf("unknown approvers command %q", trace.Sanitize(trace.Truncate(sub, 40))))
	}
	fs := e.flags(c, g)
	by := fs.String("by", "", "who is doing this, recorded as given (default $USER, else your account's name)")
	var key, origin, out *string
	var pin *bool
	var acc accessFlags
	switch sub {
	case "list":
		pin = fs.Bool("pin", false, "print pinned keys file lines")
	case "add":
		key = fs.String("key", "", "the ed25519 key file to enroll")
		acc = newAccessFlags(fs)
	case "set":
		acc = newAccessFlags(fs)
	case "remove":
	case "invite":
		origin = fs.String("origin", defaultOrigin, "the console's origin, as the browser names it")
	case "keygen":
		out = fs.String("out", "", "the private key file to write")
	default:
		return e.usageError(c, fmt.Sprintf("unknown approvers command %q", trace.Sanitize(trace.Truncate(sub, 40))))
	}
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	e.defaultBy(fs, by)
	name, code, ok := e.subArg(c, sub, pos, sub == "list" || sub == "keygen", "NAME")
	if !ok {
		return code
	}
	if sub != "list" && sub != "keygen" {
		if err := agentrt.CheckApproverName(name); err != nil {
			return e.usageError(c, strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		if *by == "" {
			return e.usageError(c, "no one to record: pass -by WHO (a label, recorded as given), since neither USER nor the system's user database names this account")
		}
	}
	switch sub {
	case "keygen":
		return e.keygen(c, *out)
	case "add":
		if *key == "" {
			return e.usageError(c, "approvers add needs -key FILE")
		}
	case "invite":
		u, err := url.Parse(*origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return e.usageError(c, "-origin must be a URL like "+defaultOrigin+", with no path")
		}
	}
	st, _, code := g.openDB(e, c, sub == "list")
	if code != ExitOK {
		return code
	}
	defer st.Close()
	ctx := background()
	op := agentrt.Operator{Store: st, Now: e.now}
	p := &printer{w: e.stdout}
	switch sub {
	case "list":
		aps, err := st.ListApprovers(ctx)
		if err != nil {
			return e.fail("reading approvers: %v", err)
		}
		for _, a := range aps {
			switch {
			case *pin:
				if !a.Removed() && a.DecodeError == "" {
					p.printf("%s\n", trace.Sanitize(agentrt.PinnedLine(a)))
				}
			case g.json:
				writeJSON(p, a)
			default:
				status := "enrolled " + a.EnrolledAt.Format(timeLayout) + " by " + clip(a.EnrolledBy, 80)
				if a.Removed() {
					status += "; removed " + a.RemovedAt.Format(timeLayout) + " by " + clip(a.RemovedBy, 80)
				}
				p.printf("%s  %s %s  %s  %s  %s\n", clip(a.Name, 128), a.Kind, a.Algorithm, clip(a.CredentialID, 96), status,
					describeAccess(a.Roles, a.Scope))
			}
		}
		if len(aps) == 0 && !g.json && !*pin {
			p.printf("no approvers\n")
		}
		return e.done(p, ExitOK)
	case "add":
		der, err := readPublicKey(*key)
		if err != nil {
			return e.fail("%v", err)
		}
		a, err := op.EnrollApprover(ctx, agentrt.NewApprover{Name: name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: *by,
			Access: acc.access()})
		if err != nil {
			return e.fail("%s", strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		if g.json {
			writeJSON(p, a)
		} else {
			p.printf("approver %s enrolled with key %s by %s\n", clip(a.Name, 128), a.CredentialID, clip(*by, 80))
		}
		return e.done(p, ExitOK)
	case "set":
		a, err := op.SetApproverAccess(ctx, name, acc.access(), *by)
		if errors.Is(err, agentrt.ErrNotFound) {
			return e.fail("no enrolled approver is named %s; nothing was changed", name)
		}
		if err != nil {
			return e.fail("%s", strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		if g.json {
			writeJSON(p, a)
		} else {
			p.printf("approver %s: %s, set by %s\n", clip(a.Name, 128), describeAccess(a.Roles, a.Scope), clip(*by, 80))
		}
		return e.done(p, ExitOK)
	case "remove":
		a, err := op.RemoveApprover(ctx, name, *by)
		if errors.Is(err, agentrt.ErrNotFound) {
			return e.fail("no enrolled approver is named %s; nothing was changed", name)
		}
		if err != nil {
			return e.fail("%s", strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		if g.json {
			writeJSON(p, a)
		} else {
			p.printf("approver %s removed by %s; what it signed before still verifies\n", clip(a.Name, 128), clip(*by, 80))
		}
		return e.done(p, ExitOK)
	case "invite":
		token, inv, err := op.InviteApprover(ctx, name, *by)
		if err != nil {
			return e.fail("%s", strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		link := strings.TrimSuffix(*origin, "/") + "/enroll#" + token
		if g.json {
			writeJSON(p, struct {
				URL       string    `json:"url"`
				Name      string    `json:"name"`
				ExpiresAt time.Time `json:"expires_at"`
			}{link, inv.Name, inv.ExpiresAt})
		} else {
			p.printf("%s\n", link)
			fmt.Fprintf(e.stderr, "agentrt: give this URL to %s only; it enrolls one passkey once, until %s\n",
				trace.Sanitize(name), inv.ExpiresAt.Format(timeLayout))
		}
		return e.done(p, ExitOK)
	}
	return ExitUsage
}

// keygen writes a new ed25519 key pair.
func (e *env) keygen(c *command, out string) int {
	if out == "" {
		return e.usageError(c, "approvers keygen needs -out FILE")
	}
	der, err := WriteKeyPair(out)
	if err != nil {
		return e.fail("%v", err)
	}
	p := &printer{w: e.stdout}
	p.printf("wrote %s (keep it private) and %s.pub; fingerprint %s\n", trace.Sanitize(out), trace.Sanitize(out), agentrt.KeyFingerprint(der))
	return e.done(p, ExitOK)
}

// WriteKeyPair writes a new ed25519 private key to out (PKCS #8 PEM,
// 0600, through files.WriteNew: never over a file already there) and its
// public key to out.pub (PKIX PEM, 0644, through files.WriteAtomic), and
// returns the public key's DER.
func WriteKeyPair(out string) ([]byte, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	pk8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding the key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encoding the key: %w", err)
	}
	err = files.WriteNew(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk8}), 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%s already exists; keygen never overwrites a key, so name a new file", out)
	}
	if err == nil {
		err = files.WriteAtomic(out+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	}
	if err != nil {
		// The files package's errors carry the prefix fail prints too.
		return nil, errors.New(strings.TrimPrefix(err.Error(), "agentrt: "))
	}
	return der, nil
}

// maxKeyFile bounds a key file's size.
const maxKeyFile = 64 << 10

func readPEM(path string, secret bool) (*pem.Block, error) {
	read := files.ReadOwned
	if secret {
		read = files.ReadSecret
	}
	b, err := read(path, maxKeyFile)
	if err != nil {
		var ime *files.InsecureModeError
		if errors.As(err, &ime) {
			return nil, err
		}
		return nil, fmt.Errorf("reading key file %s: %v", path, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("key file %s is not PEM", path)
	}
	return blk, nil
}

// readPublicKey reads an ed25519 public key, or the public half of a
// private key, as PKIX DER.
func readPublicKey(path string) ([]byte, error) {
	blk, err := readPEM(path, false)
	if err != nil {
		return nil, err
	}
	switch blk.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("key file %s: %v", path, err)
		}
		if _, ok := k.(ed25519.PublicKey); !ok {
			return nil, fmt.Errorf("key file %s holds a %T, not an ed25519 key", path, k)
		}
		return blk.Bytes, nil
	case "PRIVATE KEY":
		priv, err := readPrivateKey(path)
		if err != nil {
			return nil, err
		}
		return x509.MarshalPKIXPublicKey(priv.Public())
	}
	return nil, fmt.Errorf("key file %s holds a %q block, not a PUBLIC KEY or PRIVATE KEY", path, blk.Type)
}

// readPrivateKey reads an ed25519 private key (PKCS #8 PEM, as keygen and
// 'openssl genpkey -algorithm ed25519' write it), refusing a file others
// can read.
func readPrivateKey(path string) (ed25519.PrivateKey, error) {
	blk, err := readPEM(path, true)
	if err != nil {
		return nil, err
	}
	if blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("key file %s holds a %q block, not a PRIVATE KEY", path, blk.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %v", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key file %s holds a %T, not an ed25519 key", path, k)
	}
	return priv, nil
}

// ReadPublicKeyFile and ReadPrivateKeyFile are the readers behind -key:
// a key file is held to the rule for every trusted file (files.ReadOwned),
// a private key to the rule for secrets too. They are exported, within
// this internal package, for the test that runs every trusted reader over
// the same hostile files.
func ReadPublicKeyFile(path string) ([]byte, error) { return readPublicKey(path) }

// ReadPrivateKeyFile: see ReadPublicKeyFile.
func ReadPrivateKeyFile(path string) (ed25519.PrivateKey, error) { return readPrivateKey(path) }
