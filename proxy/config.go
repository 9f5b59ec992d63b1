package proxy

import "github.com/agentrt/agentrt/proxy/internal/config"

// The configuration is proxy/internal/config; these are its names as the
// proxy's API gives them.
type (
	// Config is a validated proxy configuration with every path absolute.
	// LoadConfig builds one from a file; every field has its default
	// filled in, so zero values mean what they say.
	Config = config.Config
	// ServerConfig is one upstream server.
	ServerConfig = config.ServerConfig
	// ToolRule is the operator's word on one tool: an mcp rule, plus the
	// proxy's own per-tool outcome and repeat window.
	ToolRule = config.ToolRule
	// DialOptions are what connecting a configured server needs beyond
	// its entry.
	DialOptions = config.DialOptions
	// Surface is what the proxy forwards from upstream servers besides
	// tools: read_only unless the server's entry says allow or deny.
	Surface = config.Surface
	// ServerRequest is a request an upstream server sends the host
	// through the proxy: refused unless the server's entry forwards it.
	ServerRequest = config.ServerRequest
	// SuggestedTool is one tool whose rule is still a suggestion.
	SuggestedTool = config.SuggestedTool
	// ReachError names the server, the argument and the file it reaches.
	ReachError = config.ReachError
)

// Defaults for the fields a configuration leaves out; the config
// package's constants say what each means.
const (
	DefaultSession      = config.DefaultSession
	DefaultHold         = config.DefaultHold
	DefaultRepeatWindow = config.DefaultRepeatWindow
	DefaultMaxPending   = config.DefaultMaxPending
	DefaultApprovalTTL  = config.DefaultApprovalTTL
	DefaultGrantTTL     = config.DefaultGrantTTL
	DefaultStatusTool   = config.DefaultStatusTool
	IndexSuffix         = config.IndexSuffix
)

// The surfaces and the server requests a server's entry names.
const (
	SurfaceResources   = config.SurfaceResources
	SurfacePrompts     = config.SurfacePrompts
	SurfaceCompletion  = config.SurfaceCompletion
	SurfaceLogging     = config.SurfaceLogging
	RequestSampling    = config.RequestSampling
	RequestElicitation = config.RequestElicitation
)

// ErrReach marks a stdio server whose arguments name one of the proxy's
// own files or a directory holding one.
var ErrReach = config.ErrReach

// LoadConfig reads a configuration file through mcp.ReadOwned (a regular
// file the current user owns that group and others cannot write, no
// symbolic link followed), refuses JSON the runtime would refuse (a
// repeated key among it), unknown fields and trailing data, resolves
// relative paths against the file's directory, fills in defaults, checks
// every field, and refuses a stdio server whose arguments reach the
// proxy's own files.
func LoadConfig(path string) (*Config, error) { return config.Load(path) }
