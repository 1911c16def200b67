package clocktest

import (
	"testing"
	"time"
)

var start = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func TestFakeRunsTimersInOrderOnAdvance(t *testing.T) {
	c := New(start)
	var fired []string
	c.AfterFunc(2*time.Second, func() { fired = append(fired, "b") })
	c.AfterFunc(time.Second, func() { fired = append(fired, "a") })
	stop := c.AfterFunc(time.Second, func() { fired = append(fired, "stopped") })
	if !stop() || stop() {
		t.Error("stop: want true once, then false")
	}
	after := c.After(1500 * time.Millisecond)
	c.Advance(999 * time.Millisecond)
	if len(fired) != 0 || len(after) != 0 {
		t.Fatalf("fired %v (After %d) before their time", fired, len(after))
	}
	c.Advance(1001 * time.Millisecond)
	if got := c.Now(); !got.Equal(start.Add(2*time.Second)) || len(fired) != 2 || fired[0] != "a" || fired[1] != "b" {
		t.Errorf("now %s, fired %v; want 02:00:02 and [a b]", got, fired)
	}
	if got := <-after; !got.Equal(start.Add(2 * time.Second)) {
		t.Errorf("After delivered %s; want the time Advance reached", got)
	}
}

func TestFakeAutoAdvance(t *testing.T) {
	c := New(start).AutoAdvance(time.Minute)
	<-c.After(time.Second)
	<-c.After(2 * time.Second)
	held := c.After(time.Minute)
	if got := c.Now(); !got.Equal(start.Add(3 * time.Second)) {
		t.Errorf("now %s; want 3 s waited", got)
	}
	select {
	case <-held:
		t.Fatal("a held wait fired without Advance")
	default:
	}
	c.Advance(time.Minute)
	<-held
	if w := c.Waits(); len(w) != 3 || w[0] != time.Second || w[2] != time.Minute {
		t.Errorf("waits %v", w)
	}
}

func TestFakeStep(t *testing.T) {
	c := New(start).Step(time.Second)
	if a, b := c.Now(), c.Now(); !a.Equal(start.Add(time.Second)) || !b.Equal(start.Add(2*time.Second)) {
		t.Errorf("readings %s, %s; want one second apart from start", a, b)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Minute, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll returned before its condition held (n=%d)", n)
	}
	if Poll(0, func() bool { return false }) {
		t.Error("Poll(0, never) = true")
	}
}

func TestFakeFollowReal(t *testing.T) {
	c := New(time.Now()).AutoAdvance(0).FollowReal()
	before := c.Now()
	<-c.After(time.Hour)
	if got := c.Now().Sub(before); got < time.Hour || got > 2*time.Hour {
		t.Errorf("an hour waited moved the clock %v; want an hour and the little real time that passed", got)
	}
}

func TestSpyWaitArmed(t *testing.T) {
	s := NewSpy()
	s.AfterFunc(time.Minute, func() {})() // armed before Forget: not counted
	s.Forget()
	go func() {
		for range 3 {
			s.AfterFunc(time.Minute, func() {})()
			s.AfterFunc(time.Hour, func() {})()
		}
	}()
	s.WaitArmed(t, time.Minute, 3, time.Minute)
}
