// Package httpguard holds what the console, the approval webhook and the
// proxy's loopback front share against slow and numerous clients: a
// listener that caps concurrent connections per server and per source,
// the key a source is counted by (an IPv4 address, an IPv6 /64), and the
// header that makes a refusal close its connection at once instead of
// waiting for a body nobody will read.
package httpguard
