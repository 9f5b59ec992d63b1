// Package fakeprovider is a loopback server that speaks OpenAI Chat
// Completions (POST /v1/chat/completions, non-streaming) and replays a
// scripted sequence of turns, for end-to-end tests and examples that must
// not call a real provider. It listens only on 127.0.0.1.
package fakeprovider
