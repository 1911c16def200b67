package status

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestFailedEnvironmentNeedsYou: a repository whose recipe failed is under "Needs you" with
// the recipe's output, and /metrics says which environment is down; a working one is not
// listed.
func TestFailedEnvironmentNeedsYou(t *testing.T) {
	b := newBuilder(t)
	b.startNight("cron")
	for _, e := range []store.Environment{
		{Repo: "app", Key: "k2", Took: 3 * time.Second, Error: "environment setup of app failed at command 2 (pip install): exit 1",
			Output: "ERROR: No matching distribution found for shinyfmt==9.9"},
		{Repo: "lib", Key: "k9", OK: true, Cached: true, BuiltAt: time.Now(), Took: 40 * time.Second},
	} {
		if err := b.st.RecordEnvironment(b.ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveWith(t, b.st, Options{})
	_, page := get(t, srv.URL+"/")
	mustContain(t, "home", page, "Environment of app failed", "shinyfmt==9.9", "repos.app.setup")
	if strings.Contains(page, "Environment of lib") {
		t.Errorf("home lists lib, whose environment works")
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	mustContain(t, "metrics", string(body), `ticketd_environment_ok{node="`+b.st.Node()+`",repo="app"} 0`,
		`ticketd_environment_ok{node="`+b.st.Node()+`",repo="lib"} 1`, `ticketd_environment_setup_seconds{node="`+b.st.Node()+`",repo="lib"} 40`)
}
