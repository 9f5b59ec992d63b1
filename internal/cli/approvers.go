package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/trace"
)

var approversCommand = fromKit(&kitCmd{
	Name:    "approvers",
	Summary: "list, add, remove or invite the approvers whose signed decisions count",
	Usage:   "list [-pin] | add NAME -key FILE [-role R] | set NAME [-role R] [-scope-kind K] [-scope-tool T] [-scope-side-effect S] [-scope-label L] | remove NAME | invite NAME [-origin URL] | keygen -out FILE",
	Subs: []*kitCmd{
		{Name: "list", Bind: cliflag.With(func(fs *flag.FlagSet, pin *bool) {
			fs.BoolVar(pin, "pin", false, "print pinned keys file lines")
		}, runApproversList)},
		{Name: "add", Bind: cliflag.With(func(fs *flag.FlagSet, o *approverOptions) {
			o.by.register(fs)
			fs.StringVar(&o.key, "key", "", "the ed25519 key file to enroll")
			o.acc = newAccessFlags(fs)
		}, runApproversAdd)},
		{Name: "set", Bind: cliflag.With(func(fs *flag.FlagSet, o *approverOptions) {
			o.by.register(fs)
			o.acc = newAccessFlags(fs)
		}, runApproversSet)},
		{Name: "remove", Bind: cliflag.With(func(fs *flag.FlagSet, o *approverOptions) { o.by.register(fs) }, runApproversRemove)},
		{Name: "invite", Bind: cliflag.With(func(fs *flag.FlagSet, o *approverOptions) {
			o.by.register(fs)
			fs.StringVar(&o.origin, "origin", defaultOrigin, "the console's origin, as the browser names it")
		}, runApproversInvite)},
		{Name: "keygen", Bind: cliflag.With(func(fs *flag.FlagSet, out *string) {
			fs.StringVar(out, "out", "", "the private key file to write")
		}, runApproversKeygen)},
	},
})

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

// approverOptions are the flags of the approvers subcommands that change
// an approver; each takes the ones it needs.
type approverOptions struct {
	by     byFlag
	key    string
	origin string
	acc    accessFlags
}

// approverChange is an approvers subcommand that changes an approver, once
// its arguments are checked and the database is open for writing.
type approverChange struct {
	x        *inv
	name, by string
	op       agentrt.Operator
	p        *printer
}

// beginApprover checks a changing subcommand's NAME, -by and then check,
// and opens the database for writing; done closes it. Unless code is
// ExitOK the command stops and nothing is open.
func (x *inv) beginApprover(sub string, pos []string, by *byFlag, check func() int) (ac approverChange, done func(), code int) {
	name, who, st, code := x.beginNamed(sub, "NAME", pos, by, func(name string) int {
		if err := agentrt.CheckApproverName(name); err != nil {
			return x.usageError(x.c, trimAgentrt(err))
		}
		if check != nil {
			return check()
		}
		return ExitOK
	})
	if code != ExitOK {
		return ac, nil, code
	}
	ac = approverChange{x: x, name: name, by: who, op: agentrt.Operator{Store: st, Now: x.now}, p: &printer{w: x.stdout}}
	return ac, func() { st.Close() }, ExitOK
}

// changed prints the approver a change left, text as line says, or why
// it was refused.
func (ac approverChange) changed(a agentrt.EnrolledApprover, err error, line func(a agentrt.EnrolledApprover) string) int {
	x := ac.x
	if errors.Is(err, agentrt.ErrNotFound) {
		return x.fail("no enrolled approver is named %s; nothing was changed", ac.name)
	}
	if err != nil {
		return x.fail("%s", trimAgentrt(err))
	}
	if x.g.json {
		writeJSON(ac.p, a)
	} else {
		ac.p.printf("%s\n", line(a))
	}
	return x.done(ac.p, ExitOK)
}

func runApproversList(x *inv, pin *bool, pos []string) int {
	if _, code, ok := x.subArg(x.c, "list", pos, true, ""); !ok {
		return code
	}
	st, _, code := x.g.openDB(x.env, x.c, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	aps, err := st.ListApprovers(background())
	if err != nil {
		return x.fail("reading approvers: %v", err)
	}
	p := &printer{w: x.stdout}
	for _, a := range aps {
		switch {
		case *pin:
			if !a.Removed() && a.DecodeError == "" {
				p.printf("%s\n", trace.Sanitize(agentrt.PinnedLine(a)))
			}
		case x.g.json:
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
	if len(aps) == 0 && !x.g.json && !*pin {
		p.printf("no approvers\n")
	}
	return x.done(p, ExitOK)
}

func runApproversAdd(x *inv, o *approverOptions, pos []string) int {
	ac, done, code := x.beginApprover("add", pos, &o.by, func() int {
		if o.key == "" {
			return x.usageError(x.c, "approvers add needs -key FILE")
		}
		return ExitOK
	})
	if code != ExitOK {
		return code
	}
	defer done()
	der, err := readPublicKey(o.key)
	if err != nil {
		return x.fail("%v", err)
	}
	a, err := ac.op.EnrollApprover(background(), agentrt.NewApprover{Name: ac.name, Kind: agentrt.ApproverKeyFile, PublicKey: der, By: ac.by,
		Access: o.acc.access()})
	return ac.changed(a, err, func(a agentrt.EnrolledApprover) string {
		return fmt.Sprintf("approver %s enrolled with key %s by %s", clip(a.Name, 128), a.CredentialID, clip(ac.by, 80))
	})
}

func runApproversSet(x *inv, o *approverOptions, pos []string) int {
	ac, done, code := x.beginApprover("set", pos, &o.by, nil)
	if code != ExitOK {
		return code
	}
	defer done()
	a, err := ac.op.SetApproverAccess(background(), ac.name, o.acc.access(), ac.by)
	return ac.changed(a, err, func(a agentrt.EnrolledApprover) string {
		return fmt.Sprintf("approver %s: %s, set by %s", clip(a.Name, 128), describeAccess(a.Roles, a.Scope), clip(ac.by, 80))
	})
}

func runApproversRemove(x *inv, o *approverOptions, pos []string) int {
	ac, done, code := x.beginApprover("remove", pos, &o.by, nil)
	if code != ExitOK {
		return code
	}
	defer done()
	a, err := ac.op.RemoveApprover(background(), ac.name, ac.by)
	return ac.changed(a, err, func(a agentrt.EnrolledApprover) string {
		return fmt.Sprintf("approver %s removed by %s; what it signed before still verifies", clip(a.Name, 128), clip(ac.by, 80))
	})
}

func runApproversInvite(x *inv, o *approverOptions, pos []string) int {
	ac, done, code := x.beginApprover("invite", pos, &o.by, func() int {
		u, err := url.Parse(o.origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return x.usageError(x.c, "-origin must be a URL like "+defaultOrigin+", with no path")
		}
		return ExitOK
	})
	if code != ExitOK {
		return code
	}
	defer done()
	token, inv, err := ac.op.InviteApprover(background(), ac.name, ac.by)
	if err != nil {
		return x.fail("%s", trimAgentrt(err))
	}
	link := strings.TrimSuffix(o.origin, "/") + "/enroll#" + token
	if x.g.json {
		writeJSON(ac.p, struct {
			URL       string    `json:"url"`
			Name      string    `json:"name"`
			ExpiresAt time.Time `json:"expires_at"`
		}{link, inv.Name, inv.ExpiresAt})
	} else {
		ac.p.printf("%s\n", link)
		fmt.Fprintf(x.stderr, "agentrt: give this URL to %s only; it enrolls one passkey once, until %s\n",
			trace.Sanitize(ac.name), inv.ExpiresAt.Format(timeLayout))
	}
	return x.done(ac.p, ExitOK)
}

// runApproversKeygen writes a new ed25519 key pair.
func runApproversKeygen(x *inv, out *string, pos []string) int {
	if _, code, ok := x.subArg(x.c, "keygen", pos, true, ""); !ok {
		return code
	}
	if *out == "" {
		return x.usageError(x.c, "approvers keygen needs -out FILE")
	}
	der, err := WriteKeyPair(*out)
	if err != nil {
		return x.fail("%v", err)
	}
	p := &printer{w: x.stdout}
	p.printf("wrote %s (keep it private) and %s.pub; fingerprint %s\n", trace.Sanitize(*out), trace.Sanitize(*out), agentrt.KeyFingerprint(der))
	return x.done(p, ExitOK)
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
