package devstack

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A background process runs in a session of its own at nice BackgroundNice, and StartBackground gives
// that session's autogroup BackgroundGroupNice, not this process's.
func TestBackgroundCommand_OwnSessionRanked(t *testing.T) {
	_, err := os.Stat("/proc/self/autogroup")
	require.NoError(t, err, "vigil dev ranks its background sessions through autogroups: this kernel must have them")
	mine, err := os.ReadFile("/proc/self/autogroup")
	require.NoError(t, err)
	cmd := BackgroundCommand(BackgroundNice, "sleep", "30")
	require.NoError(t, StartBackground(cmd))
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	require.Equal(t, strconv.Itoa(pid), fields[3], "a session of its own (stat's session field)")

	got, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/autogroup")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(got)), "nice "+strconv.Itoa(BackgroundGroupNice)), string(got))
	after, err := os.ReadFile("/proc/self/autogroup")
	require.NoError(t, err)
	require.Equal(t, string(mine), string(after), "this process's session is not touched")
	require.Eventually(t, func() bool {
		p, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid)
		return err == nil && 20-p == BackgroundNice
	}, 5e9, 1e7, "the process itself at BackgroundNice")
}
