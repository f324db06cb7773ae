package pgtest

import (
	"errors"
	"net"
	"net/url"
	"testing"
)

// A server whose port another process took before it could bind is told
// as such when postgres exits, so Start can try another port.
func TestAPortTakenMeanwhileIsToldAtOnce(t *testing.T) {
	s := Own(t)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	s.halt()
	taken, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if err := s.run(); !errors.Is(err, errPortTaken) {
		t.Fatalf("want errPortTaken, got %v", err)
	}
	taken.Close()
	if err := s.run(); err != nil {
		t.Fatalf("the port free again: %v", err)
	}
}
