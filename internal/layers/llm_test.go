package layers_test

import (
	"go/ast"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyTheRoutesNameAModelAPI: the rules of each model API the LLM gateway
// proxies (its request's free text, its key header, its errors) live once, in
// internal/llm, beside that API. The api package names an API or a provider of it
// (llm.Messages, llm.Anthropic) only where routes.go mounts it; everywhere else it
// asks the description it is handed, so that no helper branches on one API.
func TestOnlyTheRoutesNameAModelAPI(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := filepath.Clean(strings.TrimSpace(string(out)))
	variants := map[string]bool{}
	eachFile(t, filepath.Join(root, "internal", "llm"), func(_ *token.FileSet, file *ast.File) {
		for _, decl := range file.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typ := ""
				switch {
				case vs.Type != nil:
					if id, ok := vs.Type.(*ast.Ident); ok {
						typ = id.Name
					}
				case len(vs.Values) == 1:
					if u, ok := vs.Values[0].(*ast.UnaryExpr); ok {
						if c, ok := u.X.(*ast.CompositeLit); ok {
							if id, ok := c.Type.(*ast.Ident); ok {
								typ = id.Name
							}
						}
					}
				}
				if typ == "Provider" || typ == "API" {
					for _, n := range vs.Names {
						variants[n.Name] = true
					}
				}
			}
		}
	})
	if !variants["Anthropic"] || !variants["OpenAI"] || !variants["Messages"] || !variants["ChatCompletions"] {
		t.Fatalf("read the model APIs %v: internal/llm looks incomplete", variants)
	}
	named := 0
	eachFile(t, filepath.Join(root, "api"), func(fset *token.FileSet, file *ast.File) {
		name := filepath.Base(fset.Position(file.Pos()).Filename)
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "llm" && variants[sel.Sel.Name] {
				named++
				if name != "routes.go" {
					t.Errorf("%s names llm.%s: mount the API in routes.go and ask its description", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	})
	if named == 0 {
		t.Fatal("routes.go mounts no model API: the check reads nothing")
	}
}
