package chaos

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BuildHitch builds cmd/hitch of the module whose root is root into a
// directory of the test's, and returns the binary's path.
func BuildHitch(tb testing.TB, root string) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "hitch")
	build := exec.Command("go", "build", "-o", bin, "./cmd/hitch")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build hitch: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr is a loopback address with a port free at the time of the call.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Process is one `hitch serve` in a process of its own, at an address kept
// across restarts (so that what points at it — an a2a: tool entry — still
// reaches it).
type Process struct {
	Bin  string
	Addr string
	// Args are hitch serve's flags besides --addr.
	Args []string
	// Env is added to the test's environment.
	Env []string
	// Log receives the process's stdout and stderr, across restarts.
	Log io.Writer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// URL is the server's base URL.
func (p *Process) URL() string { return "http://" + p.Addr }

// Start runs the process and waits until it answers GET /health (within
// timeout), or fails when it exits first.
func (p *Process) Start(timeout time.Duration) error {
	cmd := exec.Command(p.Bin, append([]string{"serve", "--addr", p.Addr}, p.Args...)...)
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	cmd.Env = append(os.Environ(), p.Env...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start hitch serve on %s: %w", p.Addr, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := client.Get(p.URL() + "/health")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("hitch serve on %s exited at start", p.Addr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("hitch serve on %s did not answer /health within %s", p.Addr, timeout)
		}
	}
}

func (p *Process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.done
}

// Done is closed when the current process has exited.
func (p *Process) Done() <-chan struct{} {
	_, done := p.current()
	return done
}

// Signal sends sig to the current process.
func (p *Process) Signal(sig os.Signal) {
	if cmd, _ := p.current(); cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// Kill ends the process with SIGKILL (nothing of it runs after; a stopped
// process dies too) and waits for it.
func (p *Process) Kill() {
	cmd, done := p.current()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Terminate sends SIGTERM (a graceful shutdown) and waits up to timeout,
// then kills.
func (p *Process) Terminate(timeout time.Duration) {
	cmd, done := p.current()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(timeout):
		p.Kill()
	}
}

// Stop freezes the process (SIGSTOP) and waits until it is stopped.
func (p *Process) Stop() error {
	cmd, _ := p.current()
	if cmd == nil {
		return errors.New("no process")
	}
	_ = cmd.Process.Signal(syscall.SIGSTOP)
	return WaitStopped(cmd.Process.Pid)
}

// Cont continues a stopped process (SIGCONT).
func (p *Process) Cont() { p.Signal(syscall.SIGCONT) }

// WaitStopped waits until process pid is stopped (state T in /proc): a
// signal takes effect when the process's threads next enter the kernel.
func WaitStopped(pid int) error {
	for i := 0; i < 1000; i++ {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return fmt.Errorf("read the state of %d: %w", pid, err)
		}
		// pid (comm) STATE …; comm may hold spaces, so read after the last ')'.
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "T" {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("process %d did not stop", pid)
}
