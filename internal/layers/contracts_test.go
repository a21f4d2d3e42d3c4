package layers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// storeContracts reads the domain's store contracts (the interfaces of internal/...
// named Store, ...Store or Sessions) and answers each by its qualified name
// (memory.Store) with its method names.
func storeContracts(t *testing.T, root string) (contracts map[string]bool, methods map[string]string) {
	t.Helper()
	contracts, methods = map[string]bool{}, map[string]string{}
	eachInterface(t, filepath.Join(root, "internal"), func(pkg, name string, it *ast.InterfaceType) {
		if pkg == "postgres" || pkg == "cmd" || (!strings.HasSuffix(name, "Store") && name != "Sessions") {
			return
		}
		contracts[pkg+"."+name] = true
		for _, m := range it.Methods.List {
			for _, n := range m.Names {
				methods[n.Name] = pkg + "." + name
			}
		}
	})
	return contracts, methods
}

// eachInterface calls f with each interface type declared in the non-test Go files
// under dir, and the name of its package.
func eachInterface(t *testing.T, dir string, f func(pkg, name string, it *ast.InterfaceType)) {
	t.Helper()
	eachFile(t, dir, func(_ *token.FileSet, file *ast.File) {
		for _, decl := range file.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					f(file.Name.Name, ts.Name.Name, it)
				}
			}
		}
	})
}

// TestAdaptersHoldNoCopyOfAStoreContract: api, web and the generator reach a
// resource through its domain service, so none declares an interface that repeats,
// embeds or overlaps a store contract of the domain: each contract has one home.
func TestAdaptersHoldNoCopyOfAStoreContract(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := filepath.Clean(strings.TrimSpace(string(out)))
	contracts, methods := storeContracts(t, root)
	if len(contracts) < 10 || methods["CreateItem"] == "" {
		t.Fatalf("read %d store contracts: the domain looks incomplete", len(contracts))
	}
	for _, adapter := range []string{"api", "web", "generator"} {
		eachInterface(t, filepath.Join(root, adapter), func(pkg, name string, it *ast.InterfaceType) {
			for _, m := range it.Methods.List {
				if len(m.Names) == 0 { // an embedded interface
					if sel, ok := m.Type.(*ast.SelectorExpr); ok {
						if q := sel.X.(*ast.Ident).Name + "." + sel.Sel.Name; contracts[q] {
							t.Errorf("%s.%s embeds %s: hold the resource's service instead", pkg, name, q)
						}
					}
					continue
				}
				for _, n := range m.Names {
					if c, ok := methods[n.Name]; ok {
						t.Errorf("%s.%s declares %s, a method of %s: hold the resource's service instead", pkg, name, n.Name, c)
					}
				}
			}
		})
	}
}

// TestAdaptersReachUseCasesThroughTheServices: api (MCP included), web and the
// generator call a resource's service, never the store the service holds, so that
// every rule of a use case (validation, caps, events) runs whichever adapter asks.
// A field named Store read off a value (svc.Store.Session, svc.Store as an
// argument) is the store reached past its service; a type (session.Store) or a
// method named Store (an atomic pointer's) is not.
func TestAdaptersReachUseCasesThroughTheServices(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := filepath.Clean(strings.TrimSpace(string(out)))
	files := 0
	for _, adapter := range []string{"api", "web", "generator"} {
		eachFile(t, filepath.Join(root, adapter), func(fset *token.FileSet, file *ast.File) {
			files++
			packages := map[string]bool{}
			for _, im := range file.Imports {
				path := strings.Trim(im.Path.Value, `"`)
				name := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				packages[name] = true
			}
			called := map[ast.Expr]bool{}
			ast.Inspect(file, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					called[c.Fun] = true
				}
				return true
			})
			ast.Inspect(file, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Store" || called[sel] {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && packages[x.Name] {
					return true // a type, such as session.Store
				}
				t.Errorf("%s reads a service's Store: call the service's method instead", fset.Position(sel.Pos()))
				return true
			})
		})
	}
	if files < 20 {
		t.Fatalf("read %d files of the adapters: the tree looks incomplete", files)
	}
}

// eachFile calls f with each non-test Go file under dir, parsed.
func eachFile(t *testing.T, dir string, f func(*token.FileSet, *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		f(fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAdaptersHoldServicesNotStores: a struct of api (MCP included), web or the
// generator holds a resource's service, never a store contract (an interface
// declared in an internal/<r>/store.go), so that no adapter can reach storage past
// the rules of a use case, and each resource is wired once, as its service.
func TestAdaptersHoldServicesNotStores(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := filepath.Clean(strings.TrimSpace(string(out)))
	stores, err := filepath.Glob(filepath.Join(root, "internal", "*", "store.go"))
	if err != nil {
		t.Fatal(err)
	}
	contracts := map[string]bool{} // "internal/session.Store"
	fset := token.NewFileSet()
	for _, path := range stores {
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		dir := "internal/" + filepath.Base(filepath.Dir(path))
		for _, decl := range file.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, spec := range g.Specs {
					if ts := spec.(*ast.TypeSpec); isInterface(ts.Type) {
						contracts[dir+"."+ts.Name.Name] = true
					}
				}
			}
		}
	}
	if len(contracts) < 12 || !contracts["internal/auth.KeyStore"] || !contracts["internal/session.Store"] {
		t.Fatalf("read %d store contracts: the domain looks incomplete", len(contracts))
	}
	fields := 0
	for _, adapter := range []string{"api", "web", "generator"} {
		eachFile(t, filepath.Join(root, adapter), func(fset *token.FileSet, file *ast.File) {
			imports := map[string]string{} // local name: path under the module
			for _, im := range file.Imports {
				path := strings.Trim(im.Path.Value, `"`)
				rel, ok := strings.CutPrefix(path, module+"/")
				if !ok {
					continue
				}
				name := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = rel
			}
			ast.Inspect(file, func(n ast.Node) bool {
				st, ok := n.(*ast.StructType)
				if !ok {
					return true
				}
				for _, f := range st.Fields.List {
					fields++
					ast.Inspect(f.Type, func(n ast.Node) bool {
						sel, ok := n.(*ast.SelectorExpr)
						if !ok {
							return true
						}
						if x, ok := sel.X.(*ast.Ident); ok {
							if q := imports[x.Name] + "." + sel.Sel.Name; contracts[q] {
								t.Errorf("%s: a field of type %s.%s, a store contract: hold the resource's service instead", fset.Position(f.Pos()), x.Name, sel.Sel.Name)
							}
						}
						return false
					})
				}
				return true
			})
		})
	}
	if fields < 100 {
		t.Fatalf("read %d struct fields of the adapters: the tree looks incomplete", fields)
	}
}

func isInterface(e ast.Expr) bool {
	_, ok := e.(*ast.InterfaceType)
	return ok
}
