package sandbox

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A descriptor this process inherited without close-on-exec (a service
// manager's socket, a parent's pipe) does not reach a confined command.
func TestInheritedDescriptorsCloseOnExec(t *testing.T) {
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("the descriptor is close-on-exec before the test")
	}
	if err := closeInheritedOnExec(); err != nil {
		t.Fatal(err)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Fatalf("descriptor %d still passes to commands (flags %d, %v)", fd, flags, err)
	}
	for _, std := range []int{0, 1, 2} {
		if flags, err := unix.FcntlInt(uintptr(std), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC != 0 {
			t.Errorf("standard descriptor %d became close-on-exec", std)
		}
	}
}
