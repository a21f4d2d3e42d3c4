package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The server binary the tests that start replicas run, built once for the package:
// each build after the first would only link the same program again.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// buildServer compiles this command, once for the package, with the go command that
// runs the test (go test puts its GOROOT's bin first on the PATH), and returns the
// binary's path.
func buildServer(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "waystation-server-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "waystation")
		binary.out, binary.err = exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput()
	})
	if binary.err != nil {
		t.Fatalf("go build: %v\n%s", binary.err, binary.out)
	}
	return binary.path
}
