package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/asterhq/aster/internal/github"
	"github.com/asterhq/aster/internal/github/githubtest"
	"github.com/asterhq/aster/internal/store"
	"github.com/asterhq/aster/internal/store/storetest"
)

// BenchmarkWebhookAccept measures a delivery from the first byte to the 202: signature,
// parse, and the durable store of the delivery, the pull request and its job, on SQLite
// and (with ASTER_TEST_POSTGRES_URL) Postgres. Every delivery is a new pull request, so
// each one inserts a job.
func BenchmarkWebhookAccept(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		b.Run(db, func(b *testing.B) {
			o := store.Options{Path: filepath.Join(b.TempDir(), "aster.db")}
			if db == "postgres" {
				o = store.Options{URL: storetest.PostgresURL(b)}
			}
			st, err := store.Open(b.Context(), o)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			handler, err := NewHandler(HandlerOptions{WebhookSecret: []byte(testSecret), Sink: &Sink{Store: st}})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(handler)
			defer srv.Close()
			var m map[string]any
			for _, ex := range githubtest.WebhookExamples(b, "pull_request") {
				if ex.Action == "opened" {
					if err := json.Unmarshal(ex.Body, &m); err != nil {
						b.Fatal(err)
					}
					break
				}
			}
			pr := m["pull_request"].(map[string]any)
			pr["draft"] = false
			m["installation"] = map[string]any{"id": 1}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				m["number"], pr["number"] = float64(i+1), float64(i+1)
				body, _ := json.Marshal(m)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhook", bytes.NewReader(body))
				req.Header.Set(github.EventHeader, "pull_request")
				req.Header.Set(github.DeliveryHeader, fmt.Sprintf("bench-%d", i))
				req.Header.Set(github.SignatureHeader, github.Sign([]byte(testSecret), body))
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode != http.StatusAccepted {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
