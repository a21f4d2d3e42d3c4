package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/ratelimit"
)

func TestLimiterRefillsAndTellsWhenToRetry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := ratelimit.NewLimiter(60, 2, 10, func() time.Time { return now })
	for i := range 2 {
		if d := l.Allow(context.Background(), "a"); !d.OK || d.Remaining != 1-i || d.Limit != 2 {
			t.Fatalf("call %d: %+v", i, d)
		}
	}
	d := l.Allow(context.Background(), "a")
	if d.OK || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("third call: %+v", d)
	}
	if !l.Allow(context.Background(), "b").OK {
		t.Fatal("callers share a bucket")
	}
	now = now.Add(time.Second)
	if !l.Allow(context.Background(), "a").OK {
		t.Fatal("the bucket did not refill")
	}
	if !ratelimit.NewLimiter(0, 0, 0, nil).Allow(context.Background(), "x").OK {
		t.Fatal("a zero rate must not limit")
	}
}
