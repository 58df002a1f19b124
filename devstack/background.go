package devstack

import (
	"bytes"
	"io"
	"os/exec"
	"strconv"
	"sync"
)

// BackgroundNice is the CPU priority `vigil dev` gives the processes that must not take the CPU the
// API's requests need: the worker and the Temporal dev server (docs/INGEST.md "Operating it").
const BackgroundNice = 10

// BackgroundGroupNice is the nice value of a background process's session (its scheduler autogroup,
// StartBackground): with autogroups on, the kernel shares the CPU between sessions first, so a process's
// own nice value ranks it only against its own session — the Temporal dev server at nice 10 beside the
// API still took the CPU from Postgres's session, whose backends run the ingest's statements (docs/
// INGEST.md "Protecting the 202", session 15). At 5 a background session weighs a third of a normal
// one: below the API and Postgres, never starved (session 8's autogroup nice 19 weighed 1/70th and
// starved the pipeline on a machine busy with compiles).
const BackgroundGroupNice = 5

// BackgroundCommand returns a command running name with args as a background process: in a session
// (and process group) of its own (the terminal's Ctrl-C reaches only the parent, which stops it in
// order, and StartBackground ranks the session once started), killed when this process dies, at nice
// `nice` for every thread it will have (through nice(1) when it is installed, so the value is set
// before the program starts any thread; it ranks the process where the kernel has no autogroups).
func BackgroundCommand(nice int, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if path, err := exec.LookPath("nice"); err == nil && nice > 0 {
		cmd = exec.Command(path, append([]string{"-n", strconv.Itoa(nice), name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.SysProcAttr = backgroundProcAttr()
	return cmd
}

// StartBackground starts a BackgroundCommand and gives its session's autogroup BackgroundGroupNice;
// where the kernel has no autogroups the command's own nice value ranks it.
func StartBackground(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = lowerAutogroup(cmd.Process.Pid, BackgroundGroupNice)
	return nil
}

// PrefixWriter writes each complete line written to it to w with prefix in front; a partial line
// waits for its end (or Flush). Safe for concurrent use; several PrefixWriters may share w when w
// itself is (os.Stdout and os.Stderr are).
type PrefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

// NewPrefixWriter returns a PrefixWriter writing to w.
func NewPrefixWriter(w io.Writer, prefix string) *PrefixWriter {
	return &PrefixWriter{w: w, prefix: []byte(prefix)}
}

func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := p.w.Write(append(append([]byte{}, p.prefix...), p.buf[:i+1]...)); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// Flush writes a pending partial line, ended with a newline.
func (p *PrefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		_, _ = p.w.Write(append(append(append([]byte{}, p.prefix...), p.buf...), '\n'))
		p.buf = nil
	}
}
