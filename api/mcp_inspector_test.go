package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/captcha"
)

// The MCP Inspector's own CLI, pinned, lists the tools (the directory's without a
// key, the workflow's with one) and checks their schemas for portability with
// --strict: no finding, so that hosts that read a schema's type as one string, or
// refuse unconstrained ones, take every tool.
func TestTheInspectorFindsEveryToolSchemaPortable(t *testing.T) {
	t.Parallel()
	node, cli := os.Getenv("WAYSTATION_NODE"), os.Getenv("WAYSTATION_MCP_INSPECTOR")
	if node == "" || cli == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WAYSTATION_NODE and WAYSTATION_MCP_INSPECTOR must be set under CI (make test sets them)")
		}
		t.Skip("WAYSTATION_NODE and WAYSTATION_MCP_INSPECTOR are not set: run make test")
	}
	// The CLI runs only when started as its own real path: reached through a
	// symbolic link it takes itself for an import, does nothing and exits 0.
	cli, err := filepath.EvalSymlinks(cli)
	if err != nil {
		t.Fatal(err)
	}
	e := newAuthEnv(t, func(a *api.Authenticated) { a.Captchas = &captcha.Service{} }) // every tool listed
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	srv := httptest.NewServer(e.srv)
	defer srv.Close()
	for name, c := range map[string]struct {
		header string
		tools  int
	}{"without a key": {"", 4}, "with an agent key": {"Authorization: Bearer " + agentKey, 16}, "with a user key": {"Authorization: Bearer " + userKey, 5}} {
		args := []string{cli, "--cli", srv.URL + base + "/mcp", "--transport", "http", "--method", "tools/list", "--strict", "--format", "json"}
		if c.header != "" {
			args = append(args, "--header", c.header)
		}
		cmd := exec.Command(node, args...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var envelope struct {
			Result struct {
				Tools []struct{ Name string }
			}
			SchemaFindings []struct {
				ToolName string
				Findings []struct{ Rule, Severity, Schema, Path, Issue string }
			}
		}
		if err != nil || json.Unmarshal(out, &envelope) != nil {
			t.Fatalf("%s: %v\n%s\n%s", name, err, out, stderr.String())
		}
		if len(envelope.Result.Tools) != c.tools {
			t.Errorf("%s: %d tools listed, want %d", name, len(envelope.Result.Tools), c.tools)
		}
		for _, r := range envelope.SchemaFindings {
			for _, f := range r.Findings {
				t.Errorf("%s: %s %s: %s.%s: %s", name, r.ToolName, f.Severity, f.Schema, f.Path, f.Issue)
			}
		}
	}
}
