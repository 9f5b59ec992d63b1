module github.com/agentrt/agentrt/disclosure

go 1.26.0

toolchain go1.27.3

require (
	github.com/DefangLabs/secret-detector v1.1.0
	github.com/agentrt/agentrt v0.1.0
)

require (
	github.com/golang-jwt/jwt/v5 v5.2.2 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.42.0 // indirect
	gopkg.in/ini.v1 v1.66.2 // indirect
)
