package daemon

import (
	"context"
	"sync"
	"time"
)

// githubScan runs the GitHub intake once at the start of a night (no-op without GitHub).
// What GitHub refused the night before for a reason a human must remove is asked again
// at once: the human may have fixed it during the day.
func (d *Daemon) githubScan(ctx context.Context) {
	if d.GitHub != nil {
		d.GitHub.RetryRefused()
		d.GitHub.Scan(ctx)
	}
}

// runGitHub keeps the GitHub side going while the night runs: intake polls, the watch that
// cancels tickets whose issue was closed, and publishing. The returned stop ends it and
// publishes once more, so a ticket finished in the night's last minute is not left for the
// next night; calls after the first do nothing.
func (d *Daemon) runGitHub(ctx context.Context) (stop func()) {
	if d.GitHub == nil {
		return func() {}
	}
	d.GitHub.AfterIntake = d.afterIntake // issues polled in the night are linked and predicted too
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { d.GitHub.Run(ctx) })
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			final, done := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer done()
			d.GitHub.Publish(final)
		})
	}
}

// githubFailing lists the GitHub operations whose last pass failed (nil without GitHub).
func (d *Daemon) githubFailing() []string {
	if d.GitHub == nil {
		return nil
	}
	return d.GitHub.Failing()
}
