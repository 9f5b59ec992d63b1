module github.com/agentrt/agentrt/internal/release

go 1.26.5

toolchain go1.27.3

require golang.org/x/mod v0.43.0
