package agentrt

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// A tool's result may carry typed blocks beside its JSON content: text,
// images, audio, embedded resources and links to resources, each as the
// tool's source sent it. The runtime records them in the observation,
// bounded, and puts each block's type, media type, size and hash in the
// chain (the step.tool_finished event), so the record says exactly what
// came back even where the bytes were cut.

// ResultBlockType names a result block's kind.
type ResultBlockType string

const (
	// ResultText is text.
	ResultText ResultBlockType = "text"
	// ResultImage is an image: Data and MIMEType.
	ResultImage ResultBlockType = "image"
	// ResultAudio is audio: Data and MIMEType.
	ResultAudio ResultBlockType = "audio"
	// ResultResource is an embedded resource: URI, MIMEType, and Text or
	// Data.
	ResultResource ResultBlockType = "resource"
	// ResultResourceLink is a link to a resource: URI, Name, Title,
	// Description, MIMEType, and the size the source declared.
	ResultResourceLink ResultBlockType = "resource_link"
)

// Valid reports whether t is one of the result block types.
func (t ResultBlockType) Valid() bool {
	switch t {
	case ResultText, ResultImage, ResultAudio, ResultResource, ResultResourceLink:
		return true
	}
	return false
}

// Bounds on the blocks one result keeps.
const (
	// MaxResultBlocks is the most blocks one observation keeps; the rest
	// are left out of the record and the chain.
	MaxResultBlocks = 64
	// MaxResultBlockBytes is the most bytes one block keeps of its text or
	// data; a longer text is cut on a rune boundary, longer data is not
	// kept at all (a cut image is no image). Either is marked Truncated.
	MaxResultBlockBytes = 4 << 20
	// MaxResultBytes is the most bytes all of one result's blocks keep.
	MaxResultBytes = 16 << 20
)

// ResultBlock is one typed block of a tool's result.
type ResultBlock struct {
	Type     ResultBlockType `json:"type"`
	MIMEType string          `json:"mime_type,omitempty"`
	// Text is a text block's text, or an embedded resource's.
	Text string `json:"text,omitempty"`
	// Data is an image's, audio's or embedded resource's bytes.
	Data []byte `json:"data,omitempty"`
	// URI, Name, Title and Description describe a resource or a link.
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Size is the bytes of the text or data as the source sent it (for a
	// link, the size it declared, or zero); SHA256 is the hex hash of
	// those bytes as sent (for a link, of its URI). Both are set by the
	// runtime.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// Truncated marks a block whose text was cut, or whose data was left
	// out, at the bounds.
	Truncated bool `json:"truncated,omitempty"`
}

// BlockDigest is what the chain holds of one block.
type BlockDigest struct {
	Type      ResultBlockType `json:"type"`
	MIMEType  string          `json:"mime_type,omitempty" audit:"content"`
	Size      int64           `json:"size"`
	SHA256    string          `json:"sha256,omitempty" audit:"digest"`
	Truncated bool            `json:"truncated,omitempty"`
}

// Digest is the block's entry in the chain.
func (b ResultBlock) Digest() BlockDigest {
	return BlockDigest{Type: b.Type, MIMEType: b.MIMEType, Size: b.Size, SHA256: b.SHA256, Truncated: b.Truncated}
}

// boundBlocks sizes and hashes each block as sent, then cuts to the
// bounds: at most MaxResultBlocks blocks, each within MaxResultBlockBytes
// and all within MaxResultBytes (a block past what is left keeps its size
// and hash, marked Truncated). An unknown type is kept as text saying so.
func boundBlocks(in []ResultBlock) (kept []ResultBlock) {
	if len(in) == 0 {
		return nil
	}
	left := MaxResultBytes
	for _, b := range in {
		if !b.Type.Valid() {
			b = ResultBlock{Type: ResultText, Text: "[a block of an unknown type was left out]"}
		}
		b.MIMEType, b.URI, b.Name = jsonString(b.MIMEType), jsonString(b.URI), jsonString(b.Name)
		b.Title, b.Description, b.Text = jsonString(b.Title), jsonString(b.Description), jsonString(b.Text)
		var sum [32]byte
		switch {
		case b.Type == ResultResourceLink:
			// A link carries no bytes: its hash is its URI's.
			b.Text, b.Data = "", nil
			if b.Size < 0 {
				b.Size = 0
			}
			sum = sha256.Sum256([]byte(b.URI))
			b.SHA256 = hex.EncodeToString(sum[:])
		case len(b.Data) > 0:
			sum = sha256.Sum256(b.Data)
			b.Size, b.SHA256, b.Text = int64(len(b.Data)), hex.EncodeToString(sum[:]), ""
		default:
			sum = sha256.Sum256([]byte(b.Text))
			b.Size, b.SHA256 = int64(len(b.Text)), hex.EncodeToString(sum[:])
		}
		if len(kept) == MaxResultBlocks {
			break
		}
		limit := min(MaxResultBlockBytes, left)
		switch {
		case len(b.Data) > limit:
			b.Data, b.Truncated = nil, true
		case len(b.Text) > limit:
			b.Text, b.Truncated = cutRunes(b.Text, limit), true
		}
		if b.Data != nil {
			b.Data = append([]byte(nil), b.Data...)
		}
		left -= len(b.Data) + len(b.Text)
		kept = append(kept, b)
	}
	return kept
}

// cutRunes is s cut to at most n bytes on a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FailureClass says what kind of failure a tool call ended in, for a
// caller to branch on from the record rather than from an error's text.
type FailureClass string

const (
	// FailureServerError: the tool's source answered with an error; it
	// says what it did.
	FailureServerError FailureClass = "server_error"
	// FailureUnknownOutcome: the request may or may not have taken effect
	// (sent, and no answer came).
	FailureUnknownOutcome FailureClass = "unknown_outcome"
	// FailureTimeout: the tool's timeout fired; the outcome is unknown.
	FailureTimeout FailureClass = "timeout"
	// FailureRefused: refused before it reached the tool's source; it
	// cannot have taken effect.
	FailureRefused FailureClass = "refused"
	// FailureUnreadable: the source answered with a result that could not
	// be recorded; it acted as far as it did.
	FailureUnreadable FailureClass = "unreadable"
)

// ClassifiedError is an error a tool returns that says which class of
// failure it is, and the source's own account of it (for example a
// server's error text), which the runtime records bounded.
type ClassifiedError interface {
	error
	FailureClass() FailureClass
	FailureMessage() string
}

// maxFailureMessage bounds the recorded FailureMessage.
const maxFailureMessage = 64 << 10
