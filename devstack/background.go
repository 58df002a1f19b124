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

// BackgroundCommand returns a command running name with args as a background process: in a process
// group of its own (the terminal's Ctrl-C reaches only the parent, which stops it in order), killed when
// this process dies, at nice `nice` for every thread it will have (through nice(1) when it is
// installed, so the value is set before the program starts any thread).
//
// It stays in this process's session, and so in its scheduler autogroup: the nice value ranks its
// threads below the API's within the group, and the group as a whole competes with Postgres and
// other programs as before. A session (autogroup) of its own with a low autogroup weight, as
// cmd/vigil-load/stack.sh BACKGROUND_PRIORITY=low does, also ranks it below every other program on
// the machine: on a shared machine busy with compiles, the pipeline then made almost no progress
// (pipeline starts took over a minute; docs/INGEST.md).
func BackgroundCommand(nice int, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if path, err := exec.LookPath("nice"); err == nil && nice > 0 {
		cmd = exec.Command(path, append([]string{"-n", strconv.Itoa(nice), name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.SysProcAttr = childProcAttr()
	return cmd
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
