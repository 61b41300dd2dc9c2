package attack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/connectbyjbrh/ratecheck/archive"
)

// TestSend: two senders paced for an hour are stopped by take's first
// error and by the context, every result taken carries its sender's index
// and label, take is not called after its error, and stop is called once
// per stopping. A Send that did not stop its attackers would not return.
func TestSend(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	senders := func() []Sender {
		var out []Sender
		for _, stream := range []string{"a", "b"} {
			out = append(out, Sender{
				Attacker: NewAttacker(AttackerOptions{Client: srv.Client(), Workers: 1}),
				Targeter: vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodGet, URL: srv.URL}),
				Pacer:    vegeta.ConstantPacer{Freq: 200, Per: time.Second},
				Labels:   archive.Labels{Surface: "rest", Source: "127.0.0.1", Stream: stream},
				Client:   srv.Client(),
			})
		}
		return out
	}
	t.Run("take's error", func(t *testing.T) {
		t.Parallel()
		enough := errors.New("enough")
		taken, stops := 0, 0
		err := Send(context.Background(), senders(), func() { stops++ }, func(i int, r archive.Result) error {
			want := archive.Labels{Surface: "rest", Source: "127.0.0.1", Stream: []string{"a", "b"}[i]}
			if r.Labels != want || r.Attack != want.String() {
				t.Errorf("result of sender %d labelled %+v, %q, want %+v, %q", i, r.Labels, r.Attack, want, want.String())
			}
			if taken++; taken == 5 {
				return enough
			}
			if taken > 5 {
				t.Errorf("take called %d times, after its error", taken)
			}
			return nil
		})
		if !errors.Is(err, enough) || taken != 5 || stops != 1 {
			t.Errorf("Send = %v after %d taken, %d stops; want %v after 5, 1 stop", err, taken, stops, enough)
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		taken, stops := 0, 0
		err := Send(ctx, senders(), func() { stops++ }, func(int, archive.Result) error {
			if taken++; taken == 5 {
				cancel()
			}
			return nil
		})
		if err != nil || taken < 5 || stops != 1 {
			t.Errorf("Send = %v after %d taken, %d stops; want nil after 5 or more, 1 stop", err, taken, stops)
		}
	})
}
