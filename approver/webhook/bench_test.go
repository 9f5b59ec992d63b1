package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/internal/fixture"
	"github.com/agentrt/agentrt/approver/webhook"
)

// BenchmarkDecision measures one grant three ways on the same database:
// floor is a durable commit of one event (the least a decision can cost),
// local is the decision through approver.Local (its own durable commit),
// and handler is a signed POST through the Handler (verify the signature,
// check the replay set, decode, decide, commit). The target is handler ≤
// local + 200µs. Each iteration decides a fresh approval made outside the
// timer. overhead is the handler alone, in front of an Approver whose
// Approve records nothing: what the handler adds to the decision's commit.
func BenchmarkDecision(b *testing.B) {
	f := fixture.New(b)
	l := approver.New(f.Store, nil)
	l.Now = f.Clock.Now
	h, err := webhook.New(webhook.Config{Approver: l, Secret: secret, Now: f.Clock.Now, Rate: webhook.MaxRate, Burst: webhook.MaxBurst})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	fresh := func(b *testing.B) agentrt.Approval {
		b.Helper()
		n++
		f.Clock.Advance(time.Second)
		return f.Start(b, fmt.Sprintf("run-%d", n), fixture.Send(`{"to":"a"}`))
	}
	floorRun := fresh(b).RunID
	b.Run("floor", func(b *testing.B) {
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			_, err := f.Store.Update(ctx, func(tx agentrt.Tx) error {
				_, err := tx.EventAppend(agentrt.Event{RunID: floorRun, At: f.Clock.Now(), Type: "bench.floor", Payload: json.RawMessage(`{}`)})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local", func(b *testing.B) {
		ctx := context.Background()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			a := fresh(b)
			b.StartTimer()
			if err := l.Approve(ctx, decision(a, "bench")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("overhead", func(b *testing.B) {
		a := fresh(b)
		oh, err := webhook.New(webhook.Config{Approver: noCommit{l}, Secret: secret, Now: f.Clock.Now, Rate: webhook.MaxRate, Burst: webhook.MaxBurst})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			f.Clock.Advance(time.Second)
			approveTimed(b, oh, secret, f.Clock.Now(), a)
		}
	})
	b.Run("handler", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			approveTimed(b, h, secret, f.Clock.Now(), fresh(b))
		}
	})
}

// approveTimed signs a's approval as of now and serves it on h, timing
// only the serving (the caller stops the timer); anything but 202 fails b.
func approveTimed(b *testing.B, h http.Handler, secret []byte, now time.Time, a agentrt.Approval) {
	body, _ := json.Marshal(decision(a, "bench"))
	req, err := webhook.NewRequest(context.Background(), secret, now, http.MethodPost, "", approvePath(a), body)
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	b.StartTimer()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// noCommit is an Approver whose decisions cost nothing.
type noCommit struct{ approver.Approver }

func (noCommit) Approve(context.Context, approver.Answer) error { return nil }
